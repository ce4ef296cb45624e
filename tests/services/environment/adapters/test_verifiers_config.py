"""The run config's `environment.verifiers` block: launched like a builtin, exclusive with one
and with the other adapters, its module name and settings checked; each refusal one line
naming the key (what `meshrl train` prints, exit 2). The interpreter it names is resolved as
the service does it.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_verifiers_config.py
"""

import pytest

from meshrl.config import ConfigError
from meshrl.config.load import load_config
from meshrl.services.environment.adapters.served import ADAPTERS
from meshrl.services.environment.adapters.verifiers.paths import DEFAULT_PYTHON, python_of


def environment(**section):
    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}
    return load_config(base={**base, "environment": {"name": "sums", **section}}).environment


def test_a_verifiers_block_is_launched_like_a_builtin_and_served_by_its_adapter():
    env = environment(verifiers={"module": "my-env", "args": {"n": 3, "mode": "hard"}})
    assert env.launched and env.adapter == "verifiers" and "verifiers" in ADAPTERS
    assert env.verifiers.args == {"n": 3, "mode": "hard"} and env.verifiers.split == "train"
    assert not environment(verifiers={"module": "m"}, address="envs:50056").launched


def test_the_interpreter_is_the_named_one_else_the_adapter_venvs(monkeypatch, tmp_path):
    monkeypatch.delenv("MESHRL_ADAPTER_VENVS", raising=False)
    monkeypatch.chdir(tmp_path)
    assert python_of(environment(verifiers={"module": "m"}).verifiers) == str(DEFAULT_PYTHON)
    assert python_of(environment(verifiers={"module": "m", "python": "v/bin/python"}).verifiers) == str(
        tmp_path / "v/bin/python"
    )
    monkeypatch.setenv("MESHRL_ADAPTER_VENVS", "/opt/adapters")
    assert python_of(environment(verifiers={"module": "m"}).verifiers) == "/opt/adapters/verifiers/bin/python"


@pytest.mark.parametrize(
    "section, says",
    [
        ({"builtin": "tool_arith", "verifiers": {"module": "m"}}, "set one of builtin"),
        ({"openenv": {"url": "http://e:1"}, "verifiers": {"module": "m"}}, "set one of builtin"),
        ({"verifiers": {"module": "my env; rm -rf /"}}, "module"),
        ({"verifiers": {"module": "m", "split": "test"}}, "split"),
        ({"verifiers": {"module": "m", "timeout_s": 0}}, "timeout_s"),
        ({"verifiers": {"module": "m", "python": "/a\nb"}}, "on one line"),
        ({"verifiers": {"module": "m", "arguments": {}}}, "arguments"),
    ],
)
def test_a_bad_verifiers_block_is_refused_naming_it(section, says):
    with pytest.raises(ConfigError, match=says):
        environment(**section)
