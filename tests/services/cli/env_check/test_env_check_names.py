"""The kit and the served name: `serve(Mul)` serves 'Mul'; without --environment the kit
checks the server's one name and says which (a run config must give it), and a name the
server does not serve gets a fix about names, not about task fields."""

import asyncio
import sys

import grpc

from meshrl.cli.env_check import load_task, run_suite
from meshrl.env_sdk import Environment, Step, start, stop


class Mul(Environment):
    """Served as 'Mul' (its class name) unless given another name."""

    def step(self, turn):
        return Step(done=True, reward=1.0)


class Div(Environment):
    def step(self, turn):
        return Step(done=True, reward=0.0)


async def rows_of(served, environment: str = "") -> dict:
    server, port = await start(served, host="127.0.0.1")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            rows = await run_suite(channel, task=load_task(None, environment), timeout_s=10.0)
    finally:
        await stop(server, grace=0)
    return {r.check: r for r in rows}


async def test_without_environment_the_one_served_name_is_checked_and_said():
    rows = await rows_of(Mul)
    assert rows["environment name"].detail == (
        "checked as 'Mul', the one name this server serves: the run config's environment.name must be 'Mul'"
    )
    assert not [r for r in rows.values() if r.outcome == "FAIL"]


async def test_several_served_names_are_listed():
    rows = await rows_of({"mul": Mul, "div": Div})
    assert rows["environment name"].detail.startswith("this server serves 'mul', 'div'; checked as ''")


async def test_a_name_not_served_gets_a_fix_about_names():
    rows = await rows_of(Mul, environment="mulenv")
    reset = rows["reset"]
    assert reset.outcome == "FAIL" and "'mulenv' is not served here" in reset.detail
    assert "serve({'mulenv': Mul}, ...)" in reset.fix and "--environment" in reset.fix
    assert "--task" not in reset.fix and "environment name" not in rows


async def test_the_cli_prints_the_checked_name():
    server, port = await start(Mul, host="127.0.0.1")
    try:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "meshrl.cli.main", "env", "check", f"127.0.0.1:{port}"),
            stdout=asyncio.subprocess.PIPE,
        )
        out = (await proc.communicate())[0].decode()
    finally:
        await stop(server, grace=0)
    assert proc.returncode == 0 and "checked as 'Mul', the one name this server serves" in out
