"""The learner's client of `ReferenceService`: summed reference log-probs of DPO pairs.

One call per step carries every chosen and rejected sequence (ids travel packed), with a
deadline; results are matched back by id, and a missing id or a non-finite sum is an error
naming the pair, never a silent zero.
"""
from __future__ import annotations

import math

import numpy as np

from meshrl.transport.bus.codec import pack_int32
from meshrl.api.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.transport.rpc import open_channel, wait_healthy

SERVICE = "meshrl.reference.v1.ReferenceService"


class ReferenceError(RuntimeError):
    """The reference service's answer cannot be used."""


class ReferenceClient:
    def __init__(self, address: str, *, timeout_s: float):
        self.address, self.timeout_s = address, timeout_s
        self.channel = open_channel(address)
        self.stub = reference_pb2_grpc.ReferenceServiceStub(self.channel)

    async def wait_ready(self, timeout: float = 300.0) -> None:
        """The reference loads its model at start-up: wait until it reports SERVING."""
        await wait_healthy(self.address, SERVICE, timeout=timeout)

    async def summed_logprobs(self, prompts, responses) -> np.ndarray:
        """Σ_t log π_ref(y_t | x, y_<t) for each (prompt ids, response ids) pair, in order."""
        request = reference_pb2.ComputeLogprobsRequest(sequences=[
            reference_pb2.TokenSequence(id=str(i), prompt_token_ids=pack_int32(p),
                                        response_token_ids=pack_int32(r))
            for i, (p, r) in enumerate(zip(prompts, responses))])
        reply = await self.stub.ComputeLogprobs(request, timeout=self.timeout_s)
        sums = {res.id: res.sum_logprob for res in reply.results}
        missing = [i for i in range(len(prompts)) if str(i) not in sums]
        if missing:
            raise ReferenceError(f"reference at {self.address} returned no result for sequences {missing}")
        bad = [i for i in range(len(prompts)) if not math.isfinite(sums[str(i)])]
        if bad:
            raise ReferenceError(f"reference at {self.address} returned non-finite log-probs for sequences {bad}")
        return np.array([sums[str(i)] for i in range(len(prompts))], dtype=np.float32)

    async def close(self) -> None:
        await self.channel.close()
