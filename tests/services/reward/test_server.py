"""meshrl's own RewardService on a real port: by component name, by kind, combined, unknown."""

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.server import start_reward_server


@pytest.fixture
async def stub():
    comps = build_components(
        [
            C(name="em", kind="exact_match", weight=2.0),
            C(name="fmt", kind="regex", weight=0.5, params={"pattern": "^[0-9]+$"}),
            C(name="len", kind="length_penalty", weight=1.0, params={"max_len": 4, "unit": "tokens"}),
        ]
    )
    server, port = await start_reward_server(GroupScorer(comps), 0, host="127.0.0.1")
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    yield reward_pb2_grpc.RewardServiceStub(channel), channel
    await channel.close()
    await server.stop(grace=0)


def request(component: str) -> reward_pb2.ScoreRequest:
    return reward_pb2.ScoreRequest(
        component=component,
        items=[
            reward_pb2.ScoreItem(id="a", response="7", ground_truth_json='"7"'),
            reward_pb2.ScoreItem(id="b", response="seven", ground_truth_json='"7"'),
        ],
    )


async def test_health_is_serving(stub):
    _, channel = stub
    reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_configured_component_and_builtin_kind(stub):
    s, _ = stub
    got = await s.Score(request("fmt"), timeout=5)
    assert [(r.id, r.score, r.status) for r in got.results] == [("a", 1.0, 1), ("b", 0.0, 1)]
    got = await s.Score(request("exact_match"), timeout=5)
    assert [r.score for r in got.results] == [1.0, 0.0]


async def test_combined_reward_and_failed_component_is_error(stub):
    s, _ = stub
    got = await s.Score(request(""), timeout=5)
    # "len" counts tokens, unknown over gRPC → ERROR → combined reward unavailable
    assert all(
        r.status == common_pb2.SCORE_STATUS_ERROR and "len: ERROR token count unknown" in r.error for r in got.results
    )
    assert dict(got.results[0].details) == {"em": 1.0, "fmt": 1.0}


async def test_unknown_component_is_not_found_listing_choices(stub):
    s, _ = stub
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await s.Score(request("nope"), timeout=5)
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    assert "unknown reward rule" in err.value.details() and "configured components: em, fmt, len" in err.value.details()
