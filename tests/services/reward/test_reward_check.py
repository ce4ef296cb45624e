"""`meshrl reward check` (the conformance kit) on real ports: it passes against meshrl's own
reward service and the SDK example, and fails with the right row against deliberately broken
servers written here (Broken*: repeated ids, NaN with OK, no health service)."""

import asyncio
import math
import sys

import grpc
import pytest
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.cli.reward_check import any_failed, run_suite
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.server import start_reward_server


async def suite_rows(address: str) -> dict:
    async with grpc.aio.insecure_channel(
        address, options=[("grpc.max_receive_message_length", 64 << 20), ("grpc.max_send_message_length", 64 << 20)]
    ) as ch:
        rows = await run_suite(ch, timeout_s=20)
    return {r.check.split(" (")[0]: r for r in rows}


async def cli(address: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "meshrl.cli.main",
        "reward",
        "check",
        address,
        "--timeout",
        "20",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    return proc.returncode, out.decode()


class BrokenService(reward_pb2_grpc.RewardServiceServicer):
    """'repeat': every result twice; 'nan': NaN scores with status OK; 'ok': correct."""

    def __init__(self, mode: str):
        self.mode = mode

    async def Score(self, request, context):
        score = math.nan if self.mode == "nan" else 0.5
        results = [
            reward_pb2.ScoreResult(id=i.id, score=score, status=reward_pb2.SCORE_STATUS_OK) for i in request.items
        ]
        return reward_pb2.ScoreResponse(results=results * (2 if self.mode == "repeat" else 1))


@pytest.fixture
async def broken_address(request):
    mode, with_health = request.param
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", 64 << 20)])
    reward_pb2_grpc.add_RewardServiceServicer_to_server(BrokenService(mode), server)
    if with_health:
        servicer = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(servicer, server)
        await servicer.set("", health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(grace=0)


async def test_passes_against_meshrl_reward_service():
    comps = build_components(
        [
            C(name="em", kind="exact_match", weight=1.0),
            C(name="fmt", kind="regex", weight=0.5, params={"pattern": "^[0-9]+$"}),
        ]
    )
    server, port = await start_reward_server(GroupScorer(comps), 0, host="127.0.0.1")
    try:
        rows = await suite_rows(f"127.0.0.1:{port}")
    finally:
        await server.stop(grace=0)
    assert not any_failed(list(rows.values())), [r for r in rows.values() if r.outcome == "FAIL"]
    assert rows["reflection"].outcome == "INFO" and "RewardService listed" in rows["reflection"].detail
    assert rows["1,000-item batch"].detail.startswith("1000 items")


async def test_cli_passes_against_the_sdk_example(example_reward_address):
    code, out = await cli(example_reward_address)
    assert code == 0, out
    assert "12 of 12 checks passed" in out


@pytest.mark.parametrize(
    ("broken_address", "row", "says"),
    [
        (("repeat", True), "ids matched", "several results for ids"),
        (("nan", True), "no NaN/inf score with OK", "score nan with status SCORE_STATUS_OK"),
        (("ok", False), "health", "no health service (UNIMPLEMENTED)"),
    ],
    indirect=["broken_address"],
)
async def test_fails_with_the_right_row(broken_address, row, says):
    rows = await suite_rows(broken_address)
    failed = {name for name, r in rows.items() if r.outcome == "FAIL"}
    assert failed == {row}, failed
    assert says in rows[row].detail and rows[row].fix


@pytest.mark.parametrize("broken_address", [("nan", True)], indirect=True)
async def test_cli_exits_1_and_prints_the_fix(broken_address):
    code, out = await cli(broken_address)
    assert code == 1
    assert "no NaN/inf score with OK            FAIL" in out and "fix:    a NaN or infinite score" in out
    assert "1 of 12 checks FAILED" in out
