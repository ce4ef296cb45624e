"""The run config's `environment.openenv` block: launched like a builtin, exclusive with one,
its url checked; each refusal one line naming the key (what `meshrl train` prints, exit 2).

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_openenv_config.py
"""

import pytest

from meshrl.config import ConfigError
from meshrl.config.environment import ADAPTERS
from meshrl.config.load import load_config
from meshrl.services.environment.adapters.served import ADAPTERS as SERVED


def environment(**section):
    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
    return load_config(base={**base, "environment": {"name": "guess", **section}}).environment


def test_an_openenv_block_is_launched_like_a_builtin():
    env = environment(openenv={"url": "http://127.0.0.1:8000/"})
    assert env.launched and env.adapter == "openenv"
    assert env.openenv.url == "http://127.0.0.1:8000" and env.openenv.ws_url == "ws://127.0.0.1:8000/ws"
    assert environment(openenv={"url": "https://envs.example:443"}).openenv.ws_url == "wss://envs.example:443/ws"
    # with an address, the service runs elsewhere (meshrl serve environment) and nothing is launched
    assert not environment(openenv={"url": "http://e:1"}, address="envs:50056").launched


@pytest.mark.parametrize(
    "section, says",
    [
        ({"builtin": "tool_arith", "openenv": {"url": "http://e:1"}}, "set one of builtin, openenv"),
        ({"openenv": {"url": "e:8000"}}, "expected http(s)://host:port"),
        ({"openenv": {"url": "http://e:99999"}}, "expected http(s)://host:port"),
        ({"openenv": {"url": "http://e:1", "timeout_s": 0}}, "timeout_s"),
        ({"openenv": {"url": "http://e:1", "actions": {}}}, "actions"),
    ],
)
def test_a_bad_openenv_block_is_refused_naming_it(section, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        environment(**section)


def test_the_configs_adapter_blocks_are_the_services_adapters():
    """The config never imports a service, so the two lists are kept equal here."""
    assert set(ADAPTERS) == set(SERVED)
