"""gRPC helpers on a real in-process grpc.aio server: health, reflection, retries, deadlines."""

import contextlib
import time

import pytest
from grpc import StatusCode, aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.transport.rpc import (
    MissingDeadline,
    ServiceUnhealthy,
    open_channel,
    registration,
    start_server,
    stop_server,
    wait_healthy,
)

pytestmark = pytest.mark.timeout(30)
REWARD = "meshrl.reward.v1.RewardService"


class FlakyReward(reward_pb2_grpc.RewardServiceServicer):
    """Fails with UNAVAILABLE `failures` times, then answers."""

    def __init__(self, failures: int):
        self.failures, self.calls = failures, 0

    async def Score(self, request, context):
        self.calls += 1
        if self.calls <= self.failures:
            await context.abort(StatusCode.UNAVAILABLE, "warming up")
        return reward_pb2.ScoreResponse()


@contextlib.asynccontextmanager
async def serve(servicer):
    """Yield the bound port of a server hosting `servicer`; always stopped afterwards."""
    desc = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]
    server, port = await start_server(
        [registration(reward_pb2_grpc.add_RewardServiceServicer_to_server, servicer, desc)]
    )
    try:
        yield port
    finally:
        await stop_server(server, grace=0)


async def test_health_serving_per_service_and_unknown_is_not_found():
    async with serve(FlakyReward(0)) as port:
        async with open_channel(f"127.0.0.1:{port}") as ch:
            stub = health_pb2_grpc.HealthStub(ch)
            for name in ("", REWARD):
                reply = await stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=2)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            with pytest.raises(aio.AioRpcError) as err:
                await stub.Check(health_pb2.HealthCheckRequest(service="nope.Service"), timeout=2)
            assert err.value.code() == StatusCode.NOT_FOUND
        await wait_healthy(f"127.0.0.1:{port}", REWARD, timeout=2)


async def test_reflection_lists_every_service():
    async with serve(FlakyReward(0)) as port:
        async with open_channel(f"127.0.0.1:{port}") as ch:
            stub = reflection_pb2_grpc.ServerReflectionStub(ch)
            call = stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=2
            )
            reply = await call.read()
        names = {s.name for s in reply.list_services_response.service}
        assert names == {REWARD, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"}


async def test_channel_retries_unavailable_then_succeeds():
    servicer = FlakyReward(failures=2)
    async with serve(servicer) as port:
        async with open_channel(f"127.0.0.1:{port}") as ch:
            await reward_pb2_grpc.RewardServiceStub(ch).Score(reward_pb2.ScoreRequest(), timeout=5)
        assert servicer.calls == 3  # two UNAVAILABLE answers retried by the service config


async def test_channel_gives_up_after_four_attempts():
    servicer = FlakyReward(failures=10)
    async with serve(servicer) as port:
        async with open_channel(f"127.0.0.1:{port}") as ch:
            with pytest.raises(aio.AioRpcError) as err:
                await reward_pb2_grpc.RewardServiceStub(ch).Score(reward_pb2.ScoreRequest(), timeout=5)
        assert (err.value.code(), servicer.calls) == (StatusCode.UNAVAILABLE, 4)


async def test_a_call_without_deadline_is_rejected():
    async with serve(FlakyReward(0)) as port:
        async with open_channel(f"127.0.0.1:{port}") as ch:
            with pytest.raises(MissingDeadline, match="RewardService/Score has no deadline"):
                await reward_pb2_grpc.RewardServiceStub(ch).Score(reward_pb2.ScoreRequest())


async def test_large_messages_pass_the_raised_limit():
    class Echo(reward_pb2_grpc.RewardServiceServicer):
        async def Score(self, request, context):
            return reward_pb2.ScoreResponse()

    async with serve(Echo()) as port:
        big = reward_pb2.ScoreRequest(items=[reward_pb2.ScoreItem(response="x" * (8 << 20))])
        async with open_channel(f"127.0.0.1:{port}") as ch:
            await reward_pb2_grpc.RewardServiceStub(ch).Score(big, timeout=10)  # 8 MiB > gRPC's 4 MiB default


async def test_wait_healthy_fails_clearly_when_nothing_listens():
    from meshrl.addresses import free_port

    address = f"127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(ServiceUnhealthy, match=f"at {address} was not SERVING within 1 s .*UNAVAILABLE"):
        await wait_healthy(address, timeout=1)
    assert time.monotonic() - start < 2.5
