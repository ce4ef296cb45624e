"""`RewardClient`: scores evaluated samples through `RewardService.Score` (the combined reward).

Each call asks for the run's combined reward (`component=""`): `score` is the weighted sum
the learner trains on, `details` each component's raw value (only the components that
scored OK). Calls rotate over the reward replicas. A sample's `components` becomes
{name: {"value", "status"}} for every component the run config names: "OK" with its value
when it is in `details`, else "ERROR" with value None. A service that reports no details
at all (an external RewardService) leaves `components` empty.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import grpc

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.eval import EvalUnavailable
from meshrl.eval.records import EvalSample
from meshrl.transport.rpc import open_channel


def score_item(s: EvalSample) -> reward_pb2.ScoreItem:
    # The sample keeps the rules' text of the ground truth; sent as a JSON string.
    return reward_pb2.ScoreItem(
        id=s.score_id,
        prompt=s.prompt,
        response=s.response,
        ground_truth_json=json.dumps(s.ground_truth),
        data_source=s.data_source,
        extra_json=s.extra_json,
    )


def apply_result(s: EvalSample, result: reward_pb2.ScoreResult, names: tuple[str, ...]) -> None:
    s.score_ok = result.status == common_pb2.SCORE_STATUS_OK
    s.reward = result.score if s.score_ok else float("nan")
    s.score_error = result.error
    details = dict(result.details)
    if details:
        s.components = {
            n: {"value": details.get(n), "status": "OK" if n in details else "ERROR"}
            for n in dict.fromkeys([*names, *details])
        }


class RewardClient:
    def __init__(self, addresses: list[str], component_names: tuple[str, ...] = (), run_id: str = ""):
        if not addresses:
            raise EvalUnavailable(
                "no reward service to score the evaluation with: none is "
                "announced in the run KV (services/reward/*); is it running?"
            )
        self.channels = [open_channel(a) for a in addresses]
        self.targets = itertools.cycle(
            list(zip(addresses, (reward_pb2_grpc.RewardServiceStub(c) for c in self.channels)))
        )
        self.names, self.run_id = component_names, run_id

    async def score(self, samples: list[EvalSample], *, timeout_s: float) -> None:
        """Fill reward, components and status of every sample, in place."""
        if not samples:
            return
        address, stub = next(self.targets)
        request = reward_pb2.ScoreRequest(run_id=self.run_id, items=[score_item(s) for s in samples])
        try:
            reply = await stub.Score(request, timeout=timeout_s)
        except grpc.aio.AioRpcError as err:
            raise EvalUnavailable(
                f"reward service at {address}: Score failed with {err.code().name}: {err.details()}"
            ) from err
        by_id = {r.id: r for r in reply.results}
        for s in samples:
            if s.score_id in by_id:
                apply_result(s, by_id[s.score_id], self.names)
            else:
                s.score_error = f"the reward service at {address} returned no result for {s.score_id}"

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.channels))
