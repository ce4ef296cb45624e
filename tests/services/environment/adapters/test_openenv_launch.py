"""The launcher and `meshrl doctor` with an OpenEnv adapter: its replicas start before the
rollout with the run's token, like a builtin's; an OpenEnv server that is not there stops the
run before anything starts (one line naming the url) and fails the doctor's row.

Run: .venv/bin/python -m pytest -q tests/services/environment/adapters/test_openenv_launch.py
"""

import socket

import pytest

from meshrl.cli.doctor.checks_environment import _check_openenv
from meshrl.config.load import load_config
from meshrl.errors import LaunchError
from meshrl.launch.environment import check_environment_up
from meshrl.launch.run_dir import prepare_run_dir
from meshrl.launch.specs import replica_spec, service_specs

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def cfg_with(**environment):
    return load_config(base={**BASE, "environment": {"name": "guess", **environment}})


def test_openenv_replicas_start_before_the_rollout_with_the_runs_token(tmp_path):
    cfg = cfg_with(openenv={"url": "http://127.0.0.1:8000"}, replicas=2)
    assert [f"{s.name}-{s.replica}" for s in service_specs(cfg)][:3] == ["environment-0", "environment-1", "rollout-0"]
    resolved, _ = prepare_run_dir(cfg, tmp_path / "run")
    token_file = (tmp_path / "run" / "secrets" / "environment-token").resolve()
    assert replica_spec("environment", 1, resolved).env["MESHRL_ENV_TOKEN_FILE"] == str(token_file)


def test_an_openenv_server_that_is_not_there_stops_the_run_before_it_starts():
    # a port this test holds bound without listening: connections are refused, and no other
    # process can take it and answer in the meantime
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        check_that_nobody_answers(f"http://127.0.0.1:{held.getsockname()[1]}")


def check_that_nobody_answers(url: str) -> None:
    cfg = cfg_with(openenv={"url": url}, start_timeout_s=1.0)
    with pytest.raises(LaunchError, match=rf"environment 'guess': the OpenEnv server at {url}: GET /health failed"):
        check_environment_up(cfg)
    row = _check_openenv(cfg.environment)
    assert row.status == "fail" and "GET /health failed" in row.detail and "start the OpenEnv server" in row.fix, row
