"""`meshrl doctor`'s environment check: skipped without an environment; a service at an address
that answers health passes (a real SDK server), one that does not fails naming it with a fix;
a launched built-in is built for real by the service's `--check` (the python tool's sandbox
included), and a python tool this host cannot sandbox fails with the service's reason."""

import asyncio

from meshrl.cli.doctor.checks_environment import check_environment
from meshrl.cli.doctor.run import DoctorContext
from meshrl.config import load_config
from meshrl.env_sdk import Environment, start, stop
from meshrl.services.environment.sandbox import detect
from tests.fixtures.ports import refused_port

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def ctx_with(**environment) -> DoctorContext:
    sections = {"environment": environment} if environment else {}
    return DoctorContext(load_config(base={**BASE, **sections}), reward_timeout_s=2.0)


class Shop(Environment):
    """A stand-in external environment (a real gRPC server)."""


def test_skipped_without_an_environment():
    [check] = check_environment(ctx_with())
    assert check.status == "skip"


async def test_an_address_that_answers_passes_and_one_that_does_not_fails():
    server, port = await start({"shop": Shop}, host="127.0.0.1")
    try:
        with refused_port() as dead:
            good, bad, name = await asyncio.to_thread(
                check_environment, ctx_with(name="shop", address=f"127.0.0.1:{port},127.0.0.1:{dead}")
            )
    finally:
        await stop(server, grace=0)
    assert good.status == "pass" and good.detail == "SERVING"
    assert bad.status == "fail" and f"127.0.0.1:{dead}" in bad.name and "meshrl env check" in bad.fix
    assert name.status == "pass" and name.name == f"environment 'shop' at 127.0.0.1:{port} serves that name"


async def test_a_server_serving_another_name_fails_naming_both_and_the_fix():
    """`serve(Shop)` serves 'Shop'; a config saying 'shop' would drop every group of the run."""
    server, port = await start(Shop, host="127.0.0.1")
    try:
        health, name = await asyncio.to_thread(check_environment, ctx_with(name="shop", address=f"127.0.0.1:{port}"))
    finally:
        await stop(server, grace=0)
    assert health.status == "pass" and name.status == "fail"
    assert name.detail == "the server serves 'Shop', not the run config's environment.name 'shop'"
    assert "serve({'shop': Shop}, ...)" in name.fix and "environment.name to 'Shop'" in name.fix


def test_a_launched_builtin_is_built_for_real(monkeypatch):
    [check] = check_environment(ctx_with(name="arith", builtin="tool_arith"))
    assert check.status == "pass" and check.detail == "can serve arith here"
    if detect().mode:
        [check] = check_environment(ctx_with(name="py", builtin="python"))
        assert check.status == "pass" and f"python sandbox: {detect().mode} mode" in check.detail
    monkeypatch.setenv("PATH", "/nonexistent")  # no unshare: the python tool cannot be sandboxed
    [check] = check_environment(ctx_with(name="py", builtin="python"))
    assert check.status == "fail" and "cannot be sandboxed here" in check.detail
