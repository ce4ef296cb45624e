"""External reward services over real gRPC ports: the example server end to end, and fake
services (in-process grpc.aio servers named Fake*) that time out or return garbage."""

import asyncio
import math
import time

import grpc
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.services.reward.external import ExternalComponent, check_reachable
from meshrl.services.reward.types import RewardItem, Status
from tests.fixtures.ports import refused_port

ITEMS = [
    RewardItem(id="g/0", response="The answer is 7 because 3+4"),  # 2/2 kw, 27 chars: 1 - 7/20
    RewardItem(id="g/1", response="seven"),  # 0/2 kw, short
    RewardItem(id="g/2", response="my answer"),
]  # 1/2 kw


async def test_example_server_scored_end_to_end(example_reward_address):
    comp = ExternalComponent("keywords", 0.5, example_reward_address, timeout_s=5.0, run_id="r1")
    try:
        await check_reachable(comp, within_s=10.0)
        scores = await comp.score(ITEMS)
    finally:
        await comp.close()
    assert [s.status for s in scores] == [Status.OK] * 3
    assert [s.value for s in scores] == pytest.approx([1 - 7 / 20, 0.0, 0.5])
    assert scores[0].details == {"keyword_hits": 2.0, "chars": 27.0}


class FakeService(reward_pb2_grpc.RewardServiceServicer):
    """Answers per `mode`: 'sleep' past any small deadline, 'wrong_ids', 'nan', 'abort'."""

    def __init__(self, mode: str):
        self.mode = mode

    async def Score(self, request, context):
        if self.mode == "sleep":
            await asyncio.sleep(3.0)
        if self.mode == "abort":
            await context.abort(grpc.StatusCode.INTERNAL, "judge model crashed")
        ids = (
            [f"other/{i}" for i in range(len(request.items))]
            if self.mode == "wrong_ids"
            else [i.id for i in request.items]
        )
        score = math.nan if self.mode == "nan" else 1.0
        return reward_pb2.ScoreResponse(
            results=[reward_pb2.ScoreResult(id=i, score=score, status=common_pb2.SCORE_STATUS_OK) for i in ids]
        )


@pytest.fixture
async def fake_address(request):
    server = grpc.aio.server()
    reward_pb2_grpc.add_RewardServiceServicer_to_server(FakeService(request.param), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop(grace=0)


@pytest.mark.parametrize("fake_address", ["sleep"], indirect=True)
async def test_service_sleeping_past_deadline_is_timeout(fake_address):
    comp = ExternalComponent("slow", 1.0, fake_address, timeout_s=0.3)
    scores = await comp.score(ITEMS)  # 3 attempts (DEADLINE_EXCEEDED is retried), each cut at 0.3 s
    await comp.close()
    # TIMEOUT, not the OK the service sends after 3 s: the deadline was honoured (no wall-clock check)
    assert all(s.status == Status.TIMEOUT and "timeout_s=0.3s" in s.error for s in scores)
    assert all(math.isnan(s.value) for s in scores)


@pytest.mark.parametrize(
    ("fake_address", "expected"),
    [
        ("wrong_ids", "unknown ids ['other/0', 'other/1', 'other/2']"),
        ("nan", "non-finite score nan"),
        ("abort", "INTERNAL: judge model crashed"),
    ],
    indirect=["fake_address"],
)
async def test_garbage_answers_are_errors(fake_address, expected):
    comp = ExternalComponent("bad", 1.0, fake_address, timeout_s=5.0)
    scores = await comp.score(ITEMS)
    await comp.close()
    assert all(s.status == Status.ERROR and expected in s.error for s in scores), scores[0].error


async def test_unreachable_address_fails_fast_naming_component_and_address():
    with refused_port() as port:
        await unreachable_fails_fast(f"127.0.0.1:{port}")


async def unreachable_fails_fast(address: str) -> None:
    comp = ExternalComponent("judge", 1.0, address, timeout_s=5.0)
    t0 = time.monotonic()
    with pytest.raises(ConnectionError, match=rf"'judge'.*{address}.*not reachable within 1s"):
        await check_reachable(comp, within_s=1.0)
    await comp.close()
    assert time.monotonic() - t0 < 3.0
    scores = await ExternalComponent("judge", 1.0, address, timeout_s=1.0).score(ITEMS[:1])
    assert scores[0].status in (Status.ERROR, Status.TIMEOUT) and address in scores[0].error
