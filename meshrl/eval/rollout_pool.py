"""`RolloutPool`: RolloutService clients for every rollout replica, spreading Generate calls.

Each `generate(tasks)` goes to the replica with the fewest calls in flight (ties: the one
used longest ago), so concurrent batches spread evenly and a slow replica gets less work.
`wait_for_version(v)` polls `GetStatus` until every replica holds weights version ≥ v.
gRPC failures become `EvalUnavailable` naming the replica's address.

    pool = RolloutPool(["127.0.0.1:5001", "127.0.0.1:5002"])
    reply = await pool.generate(tasks, timeout_s=600)    # GenerateResponse
    await pool.close()
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass

import grpc

from meshrl.api.common.v1 import common_pb2
from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.eval import EvalUnavailable
from meshrl.transport.rpc import open_channel


@dataclass
class Replica:
    address: str
    channel: grpc.aio.Channel
    stub: rollout_pb2_grpc.RolloutServiceStub
    in_flight: int = 0
    last_used: int = 0


class RolloutPool:
    def __init__(self, addresses: list[str]):
        if not addresses:
            raise EvalUnavailable(
                "no rollout replica to evaluate with: none is announced in the "
                "run KV (services/rollout/*); is the rollout service running?"
            )
        self.replicas = []
        for address in addresses:
            channel = open_channel(address)
            self.replicas.append(Replica(address, channel, rollout_pb2_grpc.RolloutServiceStub(channel)))
        self._ticks = itertools.count(1)

    def pick(self) -> Replica:
        replica = min(self.replicas, key=lambda r: (r.in_flight, r.last_used))
        replica.last_used = next(self._ticks)
        return replica

    async def generate(self, tasks: list[common_pb2.PromptTask], *, timeout_s: float) -> rollout_pb2.GenerateResponse:
        replica = self.pick()
        replica.in_flight += 1
        try:
            return await replica.stub.Generate(rollout_pb2.GenerateRequest(tasks=tasks), timeout=timeout_s)
        except grpc.aio.AioRpcError as err:
            raise EvalUnavailable(
                f"rollout replica at {replica.address}: Generate failed with {err.code().name}: {err.details()}"
            ) from err
        finally:
            replica.in_flight -= 1

    async def versions(self, timeout_s: float = 10.0) -> dict[str, int]:
        """address → the weights version the replica holds now."""

        async def one(r: Replica) -> int:
            try:
                status = await r.stub.GetStatus(rollout_pb2.GetStatusRequest(), timeout=timeout_s)
            except grpc.aio.AioRpcError as err:
                raise EvalUnavailable(
                    f"rollout replica at {r.address}: GetStatus failed with {err.code().name}: {err.details()}"
                ) from err
            return status.policy_version

        found = await asyncio.gather(*(one(r) for r in self.replicas))
        return {r.address: v for r, v in zip(self.replicas, found)}

    async def wait_for_version(self, version: int, *, timeout_s: float, poll_s: float = 0.5) -> None:
        """Return once every replica holds version ≥ `version`; EvalUnavailable after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            behind = {a: v for a, v in (await self.versions()).items() if v < version}
            if not behind:
                return
            if time.monotonic() >= deadline:
                raise EvalUnavailable(
                    f"rollout replicas still hold older weights than version {version} after "
                    f"{timeout_s:g} s ({', '.join(f'{a}: v{v}' for a, v in behind.items())}); "
                    f"raise eval.wait_for_version_s or check the rollout logs"
                )
            await asyncio.sleep(poll_s)

    async def close(self) -> None:
        await asyncio.gather(*(r.channel.close() for r in self.replicas))
