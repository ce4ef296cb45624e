"""`EnvironmentServicer`: meshrl.env.v1.EnvironmentService over `Episodes`.

Each call: bounds checked (limits.py), then the episode's work awaited within the call's
deadline less a margin to answer (DEADLINE_EXCEEDED after it; the work goes on and a retry
gets its answer). Every failure is aborted with its status and a message naming the
episode, the turn and what to do; nothing is answered half-filled.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Mapping

import grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.env_sdk.environment import Environment
from meshrl.env_sdk.episodes import Episodes
from meshrl.env_sdk.errors import EnvError
from meshrl.env_sdk.limits import Limits, check_close, check_reset, check_step
from meshrl.transport.rpc.deadline import answer_budget

log = logging.getLogger(__name__)


class EnvironmentServicer(env_pb2_grpc.EnvironmentServiceServicer):
    def __init__(
        self,
        environments: Mapping[str, type[Environment]],
        *,
        max_episodes: int = 256,
        idle_s: float = 900.0,
        max_workers: int = 16,
        limits: Limits = Limits(),
    ):
        self.pool = ThreadPoolExecutor(max_workers, thread_name_prefix="env")
        self.episodes = Episodes(environments, self.pool, max_episodes=max_episodes, idle_s=idle_s)
        self.limits = limits

    async def _answer(self, context, what: str, start: Callable[[], asyncio.Future]):
        try:
            work = start()
            budget = answer_budget(context.time_remaining())
            return await asyncio.wait_for(asyncio.shield(work), budget)
        except EnvError as err:
            if err.code == grpc.StatusCode.INTERNAL:
                log.warning("%s: %s", what, err.message)
            await context.abort(err.code, err.message)
        except asyncio.TimeoutError:
            await context.abort(
                grpc.StatusCode.DEADLINE_EXCEEDED,
                f"{what} was not answered within the call's deadline; the work goes on "
                f"and a retry of the same call returns its answer",
            )

    async def Reset(self, request: env_pb2.ResetRequest, context) -> env_pb2.ResetResponse:
        def start():
            check_reset(request, self.limits)
            return self.episodes.reset(request)

        return await self._answer(context, f"Reset of episode {request.episode_id!r}", start)

    async def Step(self, request: env_pb2.StepRequest, context) -> env_pb2.StepResponse:
        def start():
            check_step(request, self.limits)
            return self.episodes.step(request)

        return await self._answer(context, f"Step of episode {request.episode_id!r} turn {request.turn}", start)

    async def Close(self, request: env_pb2.CloseRequest, context) -> env_pb2.CloseResponse:
        def start():
            check_close(request, self.limits)
            return asyncio.ensure_future(self.episodes.close(request.episode_id))

        await self._answer(context, f"Close of episode {request.episode_id!r}", start)
        return env_pb2.CloseResponse()

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
