"""The `environment` section: what loads, what is refused (each message naming the fix), and
the built-in names agreeing with the service's registry."""

import pytest

from meshrl.config import ConfigError, load_config

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def cfg_with(**environment):
    return load_config(base={**BASE, "environment": environment})


def test_absent_means_single_turn():
    assert load_config(base=BASE).environment is None


def test_a_builtin_served_under_the_runs_name():
    env = cfg_with(name="arith", builtin="tool_arith", replicas=2, timeout_s=5).environment
    assert env.launched and env.served == "arith=tool_arith" and (env.replicas, env.timeout_s) == (2, 5)
    assert cfg_with(name="tool_arith", builtin="tool_arith").environment.served == "tool_arith"


def test_a_builtin_served_elsewhere_launches_nothing():
    env = cfg_with(name="tool_arith", builtin="tool_arith", address="environment:50056").environment
    assert not env.launched and env.served == "tool_arith"


def test_an_external_address_launches_nothing():
    env = cfg_with(
        name="shop", address="shop-env:50090", token_env="SHOP_ENV_TOKEN", tls={"ca_file": "ca.pem"}
    ).environment
    assert not env.launched and env.tls.ca_file == "ca.pem"


@pytest.mark.parametrize(
    ("environment", "says"),
    [
        ({"name": "x"}, "set builtin .* or address"),
        (
            {"name": "x", "builtin": "chess"},
            "'chess' is not a built-in environment; use one of calculator, python, tool_arith",
        ),
        ({"name": "x", "address": "h:1", "token_env": "A", "token_file": "/t"}, "token_env or token_file, not both"),
        ({"name": "x", "builtin": "python", "replicas": 2, "grpc_port": 50090}, "each replica needs its own port"),
        ({"name": "x", "builtin": "python", "tls": {"ca_file": "ca.pem"}}, "launch.grpc_tls"),
        ({"name": "", "builtin": "python"}, "a name must not be empty"),
        ({"name": "x", "builtin": "python", "replicas": 0}, "greater than or equal to 1"),
        ({"name": "x", "builtin": "python", "sandbox": {"cpu": 3}}, "cpu"),
    ],
)
def test_refusals(environment, says):
    with pytest.raises(ConfigError, match=says):
        cfg_with(**environment)
