"""`FunctionServicer`: RewardService.Score calling a plain function once per item.

Items run concurrently (a sync function in a thread pool, an async one on the loop). The
request's deadline is honoured: whatever is not done shortly before it comes back TIMEOUT
(a sync function already running in a thread cannot be stopped; its value is dropped).
A request that repeats an id is refused with INVALID_ARGUMENT (results are matched by id).
"""

from __future__ import annotations

import asyncio
import inspect
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.reward_sdk.item import from_proto
from meshrl.reward_sdk.outcome import TIMEOUT, error, from_exception, to_result
from meshrl.transport.rpc.deadline import answer_budget


class FunctionServicer(reward_pb2_grpc.RewardServiceServicer):
    def __init__(self, fn: Callable[..., Any], *, max_workers: int = 8):
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        self.pool = ThreadPoolExecutor(max_workers, thread_name_prefix="reward-fn")

    async def one(self, it: reward_pb2.ScoreItem, request: reward_pb2.ScoreRequest) -> reward_pb2.ScoreResult:
        try:
            item = from_proto(it, request)
            if self.is_async:
                value = await self.fn(item)
            else:
                value = await asyncio.get_running_loop().run_in_executor(self.pool, self.fn, item)
        except Exception as err:  # noqa: BLE001 - any failure of the function is that item's ERROR
            return from_exception(it.id, err)
        return to_result(it.id, value)

    async def Score(self, request: reward_pb2.ScoreRequest, context) -> reward_pb2.ScoreResponse:
        repeated = [i for i, n in Counter(it.id for it in request.items).items() if n > 1]
        if repeated:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"item ids must be unique within a request; repeated: {repeated[:5]}"
            )
        tasks = [asyncio.ensure_future(self.one(it, request)) for it in request.items]
        if not tasks:
            return reward_pb2.ScoreResponse()
        budget = answer_budget(context.time_remaining())
        done, pending = await asyncio.wait(tasks, timeout=budget)
        for task in pending:
            task.cancel()
        return reward_pb2.ScoreResponse(
            results=[
                t.result()
                if t in done
                else error(it.id, f"not scored within the request's deadline ({budget:.3g} s left to score)", TIMEOUT)
                for it, t in zip(request.items, tasks)
            ]
        )

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
