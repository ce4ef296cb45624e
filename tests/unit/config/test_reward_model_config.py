"""The `reward_model` section and `kind: reward_model` components: what loads, what is refused
(each message naming the fix), and the address the reward service calls."""

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.config.reward_model import called_components, launches_reward_model, start_waits

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
RULE = {"name": "math", "kind": "math_verify"}


def cfg_with(components, **sections):
    return load_config(base={**BASE, "reward": {"components": components}, **sections})


def test_a_reward_model_component_is_called_as_external_at_the_local_port():
    cfg = cfg_with(
        [{"name": "rm", "kind": "reward_model", "weight": 0.5, "timeout_s": 30}, RULE],
        reward_model={"path": "~/rm", "normalize": "running", "clip": 5, "grpc_port": 50080},
        launch={"grpc_tls": "off"},
    )  # plaintext: with TLS (the default) see the test below
    assert cfg.reward_model.path.endswith("/rm") and not cfg.reward_model.path.startswith("~")
    assert launches_reward_model(cfg)
    rm, math = called_components(cfg)
    assert (rm.kind, rm.address, rm.weight, rm.timeout_s) == ("external", "127.0.0.1:50080", 0.5, 30)
    assert math.kind == "math_verify"
    assert start_waits(cfg) == {"rm": 300.0}
    assert cfg.reward.components[0].kind == "reward_model"  # the config itself is not changed


def test_a_component_with_an_address_is_served_elsewhere():
    cfg = cfg_with(
        [{"name": "rm", "kind": "reward_model", "address": "reward-model:50055"}], reward_model={"path": "/rm"}
    )
    assert not launches_reward_model(cfg)
    assert called_components(cfg)[0].address == "reward-model:50055"


def test_no_port_and_no_address_names_both():
    cfg = cfg_with([{"name": "rm", "kind": "reward_model"}], reward_model={"path": "/rm"})
    with pytest.raises(ConfigError, match="reward_model.grpc_port is 0.*set the component's address"):
        called_components(cfg)


@pytest.mark.parametrize(
    "components, sections, says",
    [
        ([{"name": "rm", "kind": "reward_model"}], {}, "no reward_model section: add `reward_model: {path: DIR}`"),
        ([RULE], {"reward_model": {"path": "/rm"}}, "no reward component uses it"),
        (
            [{"name": "a", "kind": "reward_model"}, {"name": "b", "kind": "reward_model"}],
            {"reward_model": {"path": "/rm"}},
            "a run has one reward model",
        ),
        (
            [{"name": "rm", "kind": "reward_model", "params": {"x": 1}}],
            {"reward_model": {"path": "/rm"}},
            "takes no params",
        ),
        ([{"name": "rm", "kind": "reward_model"}], {"reward_model": {"path": "/rm", "clip": 0}}, "clip"),
    ],
)
def test_bad_reward_model_configs_are_refused(components, sections, says):
    with pytest.raises((ConfigError, ValueError), match=says):
        cfg_with(components, **sections)


def test_with_grpc_tls_a_launched_reward_model_is_called_with_the_runs_certificate(monkeypatch):
    cfg = cfg_with(
        [{"name": "rm", "kind": "reward_model"}],
        reward_model={"path": "/rm", "grpc_port": 50080},
        launch={"grpc_tls": "mutual"},
    )
    for var, value in (("CA", "/s/ca.pem"), ("CERT", "/s/reward.pem"), ("KEY", "/s/reward.key")):
        monkeypatch.setenv(f"MESHRL_GRPC_TLS_{var}_FILE", value)
    tls = called_components(cfg)[0].tls
    assert (tls.ca_file, tls.cert_file, tls.key_file) == ("/s/ca.pem", "/s/reward.pem", "/s/reward.key")
    monkeypatch.delenv("MESHRL_GRPC_TLS_CA_FILE")
    with pytest.raises(ConfigError, match="launch.grpc_tls is on but MESHRL_GRPC_TLS_CA_FILE is not set"):
        called_components(cfg)
