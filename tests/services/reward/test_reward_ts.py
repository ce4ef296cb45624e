"""The TypeScript example (examples/external_reward_ts, @grpc/grpc-js) as a real process:
`npm ci` + build (cached in the example folder), then the conformance kit and a hand-computed
score against it. Skipped only when node or npm is not installed."""

import grpc
import pytest

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.cli.reward_check import any_failed, run_suite
from tests.fixtures.node_example import EXAMPLES, build, needs_node
from tests.fixtures.served import served_on_any_port

EXAMPLE = EXAMPLES / "external_reward_ts"
ANNOUNCED = r" on \S+:(\d+)$"  # the line the server prints once it listens: its bound port
pytestmark = needs_node


@pytest.fixture(scope="module")
def ts_address():
    build(EXAMPLE)
    command = ["node", "dist/server.js", "--port", "0", "--keywords", "answer,because", "--max-chars", "20"]
    with served_on_any_port(command, ANNOUNCED, cwd=EXAMPLE) as address:
        yield address


async def test_conformance_kit_passes(ts_address):
    async with grpc.aio.insecure_channel(ts_address) as channel:
        rows = await run_suite(channel, timeout_s=20)
    assert not any_failed(rows), [r for r in rows if r.outcome == "FAIL"]


async def test_scores_like_the_python_example(ts_address):
    items = [
        reward_pb2.ScoreItem(id="g/0", response="The answer is 7 because 3+4"),  # 2/2 kw, 27 chars: 1 - 7/20
        reward_pb2.ScoreItem(id="g/1", response="seven"),
    ]  # 0/2 kw
    async with grpc.aio.insecure_channel(ts_address) as channel:
        reply = await reward_pb2_grpc.RewardServiceStub(channel).Score(reward_pb2.ScoreRequest(items=items), timeout=10)
    by_id = {r.id: r for r in reply.results}
    assert by_id["g/0"].score == pytest.approx(1 - 7 / 20) and by_id["g/1"].score == 0.0
    assert dict(by_id["g/0"].details) == {"keyword_hits": 2.0, "chars": 27.0}
    assert {r.status for r in reply.results} == {reward_pb2.SCORE_STATUS_OK}
