"""`meshrl env check` against a good environment (the SDK's, and a plain one written without
it) and against deliberately broken ones: each broken rule fails exactly its row, with a fix."""

import asyncio
import json
import sys

import grpc
import pytest

from meshrl.api.env.v1 import env_pb2
from meshrl.cli.env_check import load_task, run_suite
from meshrl.cli.reward_check import any_failed
from meshrl.env_sdk import Environment, Step, start, stop
from meshrl.services.rollout.agent import answers
from meshrl.services.rollout.agent.failures import InvalidAnswer
from tests.services.cli.env_check.broken_envs import (
    BadUtf8,
    BrokenAnswers,
    BrokenForgetful,
    BrokenOnToolCalls,
    BrokenRoles,
    BrokenSlow,
    BrokenStatuses,
    BrokenWire,
    PlainEnv,
    TakesRefusedCallsForAnAnswer,
    TaskFromEpisodeSeed,
    serve_broken,
)

TOKEN = "env-check-token-not-a-secret"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Sums(Environment):
    """A good environment written with the SDK (for the kit's test)."""

    tools = [add]

    def step(self, turn):
        return Step(self.call_tools(turn)) if turn.tried_tools else Step(done=True, reward=float("7" in turn.text))


async def suite(address: str, *, timeout_s: float = 10.0, metadata=()) -> dict:
    async with grpc.aio.insecure_channel(address) as channel:
        rows = await run_suite(channel, task=load_task(None, ""), timeout_s=timeout_s, metadata=metadata)
    return {r.check: r for r in rows}


def failed(rows: dict) -> set[str]:
    return {name for name, r in rows.items() if r.outcome == "FAIL"}


async def test_an_sdk_environment_passes():
    server, port = await start(Sums, host="127.0.0.1")
    try:
        rows = await suite(f"127.0.0.1:{port}")
    finally:
        await stop(server, grace=0)
    assert failed(rows) == set(), [rows[n] for n in failed(rows)]
    assert rows["episode ends"].detail == "done at turn 0" and rows["reflection (optional)"].outcome == "INFO"
    assert rows["a turn of refused calls is no answer"].outcome == "PASS"
    assert rows["one task per group (group_seed)"].outcome == "PASS"


async def test_a_plain_grpc_environment_passes():
    server, address = await serve_broken(PlainEnv())
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    assert failed(rows) == set(), [rows[n] for n in failed(rows)]


@pytest.mark.parametrize(
    ("broken", "rows_failing"),
    [
        (
            BrokenForgetful(),
            {
                "reset is idempotent",
                "step is idempotent",
                "step after close → NOT_FOUND",
                "unknown episode → NOT_FOUND",
                "empty episode id → INVALID_ARGUMENT",
                "turn out of order → INVALID_ARGUMENT",
            },
        ),
        (
            BrokenStatuses(),
            {
                "step after close → NOT_FOUND",
                "unknown episode → NOT_FOUND",
                "empty episode id → INVALID_ARGUMENT",
                "empty episode id on Reset → INVALID_ARGUMENT",
                "turn out of order → INVALID_ARGUMENT",
            },
        ),
        (BrokenOnToolCalls(), {"malformed tool calls answered"}),
        (BrokenAnswers(), {"answers follow the contract"}),
    ],
)
async def test_each_broken_rule_fails_its_row_with_a_fix(broken, rows_failing):
    server, address = await serve_broken(broken)
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    assert failed(rows) == rows_failing
    assert all(rows[name].fix for name in rows_failing)


async def test_broken_answers_are_named():
    server, address = await serve_broken(BrokenAnswers())
    try:
        detail = (await suite(address))["answers follow the contract"].detail
    finally:
        await server.stop(0)
    assert "Reset offered a tool name twice: ['add']" in detail and "info_json is not JSON" in detail


async def test_a_role_the_rollout_refuses_fails_the_kit_as_it_drops_the_episode():
    server, address = await serve_broken(BrokenRoles())
    try:
        row = (await suite(address))["answers follow the contract"]
    finally:
        await server.stop(0)
    said = "Step turn 0's observation has a message with role 'system'; allowed: tool, user"
    assert row.outcome == "FAIL" and said in row.detail and "a Step's tool or user" in row.fix
    with pytest.raises(InvalidAnswer, match=said):  # the rollout's verdict on the same answer, same words
        answers.check_step(BrokenRoles().answer(env_pb2.StepRequest()), 0)


async def test_an_answer_that_is_no_protobuf_is_a_fail_row_not_a_traceback():
    server, address = await serve_broken(BrokenWire())
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    assert rows["step"].outcome == "FAIL"
    assert rows["step"].detail.startswith(
        "Step turn 0 failed: INVALID_ANSWER: answered 19 bytes that are no StepResponse"
    )
    assert "serialized ResetResponse / StepResponse" in rows["step"].fix
    assert rows["concurrent episodes (8)"].outcome == "FAIL" and rows["reset"].outcome == "PASS"


async def test_bad_utf8_in_an_answer_is_repaired_as_the_rollout_repairs_it():
    server, address = await serve_broken(BadUtf8())
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    assert failed(rows) == set(), [rows[n] for n in failed(rows)]


async def test_refused_calls_taken_for_an_answer_are_reported_not_failed():
    server, address = await serve_broken(TakesRefusedCallsForAnAnswer())
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    row = rows["a turn of refused calls is no answer"]
    assert failed(rows) == set() and row.outcome == "INFO" and "never reads meshrl's error" in row.detail


async def test_a_task_drawn_from_the_episode_seed_is_reported_not_failed():
    server, address = await serve_broken(TaskFromEpisodeSeed())
    try:
        rows = await suite(address)
    finally:
        await server.stop(0)
    row = rows["one task per group (group_seed)"]
    assert failed(rows) == set() and row.outcome == "INFO" and "draw it from group_seed" in row.detail


async def test_no_health_and_a_slow_reset():
    server, address = await serve_broken(BrokenSlow(), with_health=False)
    try:
        rows = await suite(address, timeout_s=1.0)
    finally:
        await server.stop(0)
    assert rows["health (grpc.health.v1)"].detail == "no health service (UNIMPLEMENTED)"
    assert rows["reset"].outcome == "FAIL" and rows["reset"].detail.startswith("Reset failed: DEADLINE_EXCEEDED")
    assert "--timeout" in rows["reset"].fix


async def test_a_server_that_ignores_the_token_fails_the_token_row():
    server, address = await serve_broken(PlainEnv())
    try:
        rows = await suite(address, metadata=(("authorization", f"Bearer {TOKEN}"),))
    finally:
        await server.stop(0)
    assert failed(rows) == {"no token → UNAUTHENTICATED"}


async def test_an_sdk_server_with_a_token_passes_the_token_row():
    server, port = await start(Sums, host="127.0.0.1", token=TOKEN)
    try:
        rows = await suite(f"127.0.0.1:{port}", metadata=(("authorization", f"Bearer {TOKEN}"),))
    finally:
        await stop(server, grace=0)
    assert rows["no token → UNAUTHENTICATED"].outcome == "PASS" and not any_failed(list(rows.values()))


async def cli(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "meshrl.cli.main",
        "env",
        "check",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


async def test_cli_exit_codes(tmp_path):
    good, port = await start(Sums, host="127.0.0.1")
    bad, bad_address = await serve_broken(BrokenOnToolCalls())
    (tmp_path / "row.json").write_text(json.dumps({"prompt": "What is 3+4?", "reward_model": {"ground_truth": "7"}}))
    try:
        code, out = await cli(f"127.0.0.1:{port}", "--task", str(tmp_path / "row.json"))
        assert code == 0 and "checks passed" in out, out
        code, out = await cli(bad_address)
        assert code == 1 and "1 of 22 checks FAILED" in out and "fix:" in out, out
        code, out = await cli(bad_address, "--task", str(tmp_path / "absent.json"))
        assert code == 2 and "--task" in out and "cannot read it" in out, out
    finally:
        await stop(good, grace=0)
        await bad.stop(0)
