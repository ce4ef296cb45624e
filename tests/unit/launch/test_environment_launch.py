"""The launcher's side of an environment: built-in replicas start before the rollout with the
run's token file (0600, named in RUN_DIR/config.yaml for the rollout, removed at the end) and
its own gRPC certificate kind; `meshrl scale RUN env=N` reaches them; an environment at an
address starts nothing and must answer health before anything starts (a real server here)."""

import asyncio
import stat

import pytest

from meshrl.addresses import free_port
from meshrl.config.load import load_config
from meshrl.env_sdk import Environment, start, stop
from meshrl.errors import LaunchError
from meshrl.launch.environment import check_environment_up, run_environment_token
from meshrl.launch.run_dir import prepare_run_dir
from meshrl.launch.secrets import KINDS
from meshrl.launch.specs import replica_spec, service_specs
from meshrl.run.scale import parse_counts

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def cfg_with(**environment):
    return load_config(base={**BASE, "environment": environment})


def test_builtin_replicas_start_first_with_the_runs_token(tmp_path):
    cfg = cfg_with(name="arith", builtin="tool_arith", replicas=2)
    keys = [f"{s.name}-{s.replica}" for s in service_specs(cfg)]
    assert keys[:3] == ["environment-0", "environment-1", "rollout-0"]
    resolved, path = prepare_run_dir(cfg, tmp_path / "run")
    token_file = (tmp_path / "run" / "secrets" / "environment-token").resolve()
    assert load_config(path).environment.token_file == str(token_file)  # what the rollout reads
    spec = replica_spec("environment", 1, resolved)
    assert spec.env["MESHRL_ENV_TOKEN_FILE"] == str(token_file) and spec.env["OMP_NUM_THREADS"] == "1"
    with run_environment_token(resolved, tmp_path / "run"):
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token_file.read_text()) >= 32
        first = token_file.read_text()
    assert not token_file.exists()
    with run_environment_token(resolved, tmp_path / "run"):
        assert token_file.read_text() != first  # a fresh token per launcher start
    assert "environment" in KINDS  # its own gRPC certificate with launch.grpc_tls


def test_a_users_token_is_passed_on_not_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_ENV_TOKEN", "users-token-value")
    resolved, _ = prepare_run_dir(
        cfg_with(name="arith", builtin="tool_arith", token_env="MY_ENV_TOKEN"), tmp_path / "r"
    )
    assert resolved.environment.token_file is None
    assert replica_spec("environment", 0, resolved).env["MESHRL_ENV_TOKEN"] == "users-token-value"


def test_scale_env_is_the_environment():
    assert parse_counts(["env=3", "rollout=2"]) == {"environment": 3, "rollout": 2}


def test_an_environment_at_an_address_is_not_started(tmp_path):
    cfg = cfg_with(name="shop", address="shop-env:50090")
    assert "environment" not in [s.name for s in service_specs(cfg)]
    resolved, _ = prepare_run_dir(cfg, tmp_path / "run")
    assert resolved.environment.token_file is None


def test_an_environment_that_is_not_there_stops_the_run_before_it_starts():
    port = free_port()
    cfg = cfg_with(name="shop", address=f"127.0.0.1:{port}", start_timeout_s=1.5)
    with pytest.raises(LaunchError, match=rf"environment 'shop' at 127.0.0.1:{port}: .*meshrl env check ADDRESS"):
        check_environment_up(cfg)


class Shop(Environment):
    """A stand-in external environment (a real gRPC server) for the start-up check."""

    name = "shop"


async def test_an_environment_that_answers_lets_the_run_start():
    server, port = await start(Shop, host="127.0.0.1")
    try:
        await asyncio.to_thread(check_environment_up, cfg_with(name="shop", address=f"127.0.0.1:{port}"))
    finally:
        await stop(server, grace=0)


class Mul(Environment):
    """Served under its class name, as `serve(Mul)` serves it."""


async def test_an_environment_serving_another_name_stops_the_run_before_it_starts():
    server, port = await start(Mul, host="127.0.0.1")
    try:
        cfg = cfg_with(name="mulenv", address=f"127.0.0.1:{port}")
        with pytest.raises(LaunchError) as refused:
            await asyncio.to_thread(check_environment_up, cfg)
    finally:
        await stop(server, grace=0)
    assert str(refused.value).startswith(
        f"environment.name is 'mulenv' but the environment at 127.0.0.1:{port} serves 'Mul': set environment.name "
        "to 'Mul', or serve it under 'mulenv' (meshrl.env_sdk: serve({'mulenv': YourClass}, ...)"
    )
