"""gRPC `RolloutService` (direct generation for evaluation, status) on the engine's event loop.

`Generate` samples every task of the request concurrently with the weights held now (one
AsyncLLM batches them) and answers with the groups and the version; a task that names an
environment is played as episodes (evaluation of an agent task), as on the bus. `GetStatus` reports the
replica id, the version, whether it is ready (holds the run's newest version), counters
and the model. The server is `grpc.aio`, so it shares the event loop with the AsyncLLM and
the NATS worker; `meshrl.transport.rpc.start_server` adds `grpc.health.v1`, reflection and 64 MiB
message limits (a batch of eval groups can exceed gRPC's 4 MiB default).

`start_rollout_server(engine, port, ready=...)` → (server, bound port); port 0 picks a free one.
"""

from __future__ import annotations

import asyncio
from typing import Callable

import grpc

from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.services.rollout.worker import NoEnvironment, generate_group
from meshrl.transport.rpc import registration, start_server

SERVICE_NAME = rollout_pb2.DESCRIPTOR.services_by_name["RolloutService"].full_name


class RolloutServicer(rollout_pb2_grpc.RolloutServiceServicer):
    def __init__(self, engine, ready: Callable[[], bool] = lambda: True, agent=None):
        self.engine, self.ready, self.agent = engine, ready, agent

    async def Generate(self, request: rollout_pb2.GenerateRequest, context) -> rollout_pb2.GenerateResponse:
        if not request.tasks:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "GenerateRequest.tasks is empty")
        try:
            groups = await asyncio.gather(*(generate_group(self.engine, self.agent, t) for t in request.tasks))
        except ValueError as err:  # bad sampling params or empty prompt ids, named by the engine
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        except NoEnvironment as err:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(err))
        return rollout_pb2.GenerateResponse(groups=groups, policy_version=self.engine.version)

    async def GetStatus(self, request, context) -> rollout_pb2.GetStatusResponse:
        engine = self.engine
        return rollout_pb2.GetStatusResponse(
            replica_id=engine.config.replica_id,
            policy_version=engine.version,
            ready=self.ready(),
            groups_generated=engine.groups_generated,
            tokens_generated=engine.tokens_generated,
            model=engine.config.model,
        )


async def start_rollout_server(
    engine, port: int = 0, *, host: str | None = None, ready: Callable[[], bool] = lambda: True, agent=None
) -> tuple[grpc.aio.Server, int]:
    """Serve RolloutService with health + reflection (meshrl.transport.rpc); returns (server, bound port)."""
    servicer = RolloutServicer(engine, ready, agent)
    return await start_server(
        [registration(rollout_pb2_grpc.add_RolloutServiceServicer_to_server, servicer, SERVICE_NAME)],
        port=port,
        host=host,
    )
