"""watch_engine on a real grpc.aio server with a fake engine (a flag standing in for vLLM's
AsyncLLM.errored): SERVING while the engine lives; once it dies, NOT_SERVING for the server and
each service, and EngineDied naming the replica. The real engine's death (its engine-core
process SIGKILLed) is tests/services/rollout/test_engine_death.py.

    .venv/bin/python -m pytest -q tests/unit/services/rollout/test_engine_watch.py
"""

import asyncio
from types import SimpleNamespace

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.api.rollout.v1 import rollout_pb2_grpc
from meshrl.services.rollout.engine_watch import EngineDied, watch_engine
from meshrl.services.rollout.server import SERVICE_NAME
from meshrl.transport.rpc import registration, start_server, stop_server

pytestmark = pytest.mark.timeout(30)


class FakeEngine:
    """Only what the watch reads: `alive` and the replica id."""

    def __init__(self):
        self.alive = True
        self.config = SimpleNamespace(replica_id="rollout-w")


async def status(port: int, service: str) -> str:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        reply = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=5
        )
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


async def test_a_dead_engine_turns_the_server_not_serving_and_ends_the_watch():
    server, port = await start_server(
        [
            registration(
                rollout_pb2_grpc.add_RolloutServiceServicer_to_server,
                rollout_pb2_grpc.RolloutServiceServicer(),
                SERVICE_NAME,
            )
        ]
    )
    engine = FakeEngine()
    try:
        watch = asyncio.create_task(watch_engine(engine, server, every_s=0.05))
        await asyncio.sleep(0.3)
        assert not watch.done()
        assert [await status(port, s) for s in ("", SERVICE_NAME)] == ["SERVING", "SERVING"]

        engine.alive = False
        with pytest.raises(EngineDied, match="rollout replica rollout-w: its vLLM engine died"):
            await asyncio.wait_for(watch, 5)
        assert [await status(port, s) for s in ("", SERVICE_NAME)] == ["NOT_SERVING", "NOT_SERVING"]
    finally:
        await stop_server(server, grace=0)
