"""gRPC RolloutService on a real port, in the same event loop as the real vLLM engine.

Run: .venv/bin/python -m pytest tests/services/rollout/test_server.py -m slow
"""

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.services.rollout.server import SERVICE_NAME, start_rollout_server
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from meshrl.transport.rpc import stop_server
from tests.fixtures.vllm import prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


@pytest.fixture
async def channel(base_rollout_engine):
    server, port = await start_rollout_server(base_rollout_engine, 0, host="127.0.0.1", ready=lambda: True)
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield ch
    await stop_server(server, grace=0)


async def test_generate_returns_one_group_per_task(channel, base_rollout_engine):
    tok = base_rollout_engine.tokenizer
    request = rollout_pb2.GenerateRequest(
        tasks=[prompt_task(tok, "one", group_id="e-1", n=2), prompt_task(tok, "two", group_id="e-2", n=3)]
    )
    reply = await rollout_pb2_grpc.RolloutServiceStub(channel).Generate(request, timeout=60)
    assert reply.policy_version == 0
    assert [g.group_id for g in reply.groups] == ["e-1", "e-2"]
    assert [len(g.samples) for g in reply.groups] == [2, 3]
    for sample in reply.groups[1].samples:
        assert len(unpack_int32(sample.response_token_ids)) == len(unpack_float32(sample.behaviour_logprobs)) > 0


async def test_generate_rejects_bad_requests_with_invalid_argument(channel, base_rollout_engine):
    stub = rollout_pb2_grpc.RolloutServiceStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as empty:
        await stub.Generate(rollout_pb2.GenerateRequest(), timeout=10)
    bad = prompt_task(base_rollout_engine.tokenizer, max_tokens=8)
    bad.sampling.max_tokens = 0
    with pytest.raises(grpc.aio.AioRpcError) as zero:
        await stub.Generate(rollout_pb2.GenerateRequest(tasks=[bad]), timeout=10)
    assert empty.value.code() == zero.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "max_tokens" in zero.value.details()


async def test_status_health_and_reflection(channel, base_rollout_engine):
    before = base_rollout_engine.groups_generated
    status = await rollout_pb2_grpc.RolloutServiceStub(channel).GetStatus(rollout_pb2.GetStatusRequest(), timeout=5)
    assert (status.replica_id, status.policy_version, status.ready) == ("rollout-test", 0, True)
    assert status.groups_generated == before and status.model == base_rollout_engine.config.model
    health = await health_pb2_grpc.HealthStub(channel).Check(
        health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=5
    )
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    stream = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo(
        iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=5
    )
    async for answer in stream:
        listed = {s.name for s in answer.list_services_response.service}
        break
    assert SERVICE_NAME in listed and "grpc.health.v1.Health" in listed
