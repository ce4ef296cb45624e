"""The launcher's side of a learned reward model: its replicas start before the reward
service, on one port resolved into RUN_DIR/config.yaml (what the reward service calls), and
`meshrl scale` accepts them; a component with its own address starts nothing."""

from meshrl.config.load import load_config
from meshrl.config.reward_model import called_components
from meshrl.launch.run_dir import prepare_run_dir
from meshrl.launch.specs import replica_spec, service_specs
from meshrl.run.scale import parse_counts
from meshrl.transport.rpc.mesh_tls import CA_ENV

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "ppo"}}


def cfg_with(component: dict, **reward_model):
    return load_config(
        base={
            **BASE,
            "reward_model": {"path": "/rm", **reward_model},
            "reward": {"components": [component, {"name": "math", "kind": "math_verify"}]},
        }
    )


def test_reward_model_replicas_start_before_the_reward_on_a_resolved_port(tmp_path, monkeypatch):
    monkeypatch.setenv(
        CA_ENV, "/run/secrets/grpc-ca.pem"
    )  # the launcher gives the reward service its TLS (the default)
    cfg = cfg_with({"name": "rm", "kind": "reward_model"}, replicas=2)
    keys = [f"{s.name}-{s.replica}" for s in service_specs(cfg)]
    assert keys[:4] == ["rollout-0", "reward_model-0", "reward_model-1", "reward-0"]
    resolved, path = prepare_run_dir(cfg, tmp_path / "run")
    assert resolved.reward_model.grpc_port > 0 and cfg.reward_model.grpc_port == 0
    again = load_config(path)  # what the reward service reads
    called = called_components(again)[0]
    assert called.address == f"127.0.0.1:{resolved.reward_model.grpc_port}"
    assert called.tls.ca_file == "/run/secrets/grpc-ca.pem"


def test_a_reward_model_at_an_address_is_not_started(tmp_path):
    cfg = cfg_with({"name": "rm", "kind": "reward_model", "address": "rm.svc:50055"})
    assert "reward_model" not in [s.name for s in service_specs(cfg)]
    resolved, _ = prepare_run_dir(cfg, tmp_path / "run")
    assert resolved.reward_model.grpc_port == 0


def test_scale_accepts_reward_model_and_its_replica_spec_exists():
    assert parse_counts(["reward_model=3"]) == {"reward_model": 3}
    assert replica_spec("reward_model", 2, cfg_with({"name": "rm", "kind": "reward_model"})).name == "reward_model"
