"""meshrl.reward_sdk on a real port: health, per-item failures, deadline, repeated ids."""

import asyncio
import math

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.reward_sdk import Item, start


async def judge(item: Item):
    if item.response == "boom":
        raise RuntimeError("judge crashed")
    if item.response == "nan":
        return math.nan
    if item.response == "slow":
        await asyncio.sleep(5)
    return float(item.ground_truth == item.response), {"chars": len(item.response)}


@pytest.fixture
async def channel():
    server, port = await start(judge, host="127.0.0.1")
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await server.stop(grace=0)


def items(*responses: str) -> list[reward_pb2.ScoreItem]:
    return [reward_pb2.ScoreItem(id=f"i{n}", response=r, ground_truth_json='"7"') for n, r in enumerate(responses)]


async def test_health_serving(channel):
    for service in ("", "meshrl.reward.v1.RewardService"):
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_scores_errors_and_timeout(channel):
    stub = reward_pb2_grpc.RewardServiceStub(channel)
    reply = await stub.Score(reward_pb2.ScoreRequest(items=items("7", "8", "boom", "nan", "slow")), timeout=1.0)
    by_id = {r.id: r for r in reply.results}
    assert (by_id["i0"].status, by_id["i0"].score, dict(by_id["i0"].details)) == (
        reward_pb2.SCORE_STATUS_OK,
        1.0,
        {"chars": 1.0},
    )
    assert (by_id["i1"].status, by_id["i1"].score) == (reward_pb2.SCORE_STATUS_OK, 0.0)
    assert by_id["i2"].status == reward_pb2.SCORE_STATUS_ERROR and by_id["i2"].error == "RuntimeError: judge crashed"
    assert by_id["i3"].status == reward_pb2.SCORE_STATUS_ERROR and "non-finite score nan" in by_id["i3"].error
    assert by_id["i4"].status == reward_pb2.SCORE_STATUS_TIMEOUT and "deadline" in by_id["i4"].error


async def test_repeated_id_is_invalid_argument(channel):
    stub = reward_pb2_grpc.RewardServiceStub(channel)
    request = reward_pb2.ScoreRequest(items=[*items("7"), *items("8")])
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.Score(request, timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "['i0']" in err.value.details()
