"""The learner's client of `ReferenceService`: reference log-probs of DPO pairs, summed or per
token (LD-DPO weights the tokens itself).

One call per step carries every chosen and rejected sequence (ids travel packed), with a
deadline; results are matched back by id, and a missing id or a non-finite sum is an error
naming the pair, never a silent zero.
"""

from __future__ import annotations

import math

import numpy as np

from meshrl.api.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.transport.bus.codec import pack_int32, unpack_float32
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
        results = await self._results(prompts, responses)
        return np.array([r.sum_logprob for r in results], dtype=np.float32)

    async def token_logprobs(self, prompts, responses) -> list[np.ndarray]:
        """log π_ref(y_t | x, y_<t) per response token [len(y)] for each pair, in order."""
        results = await self._results(prompts, responses)
        tokens = [unpack_float32(r.logprobs) for r in results]
        short = [i for i, (t, y) in enumerate(zip(tokens, responses)) if len(t) != len(y)]
        if short:
            raise ReferenceError(
                f"reference at {self.address} returned a log-prob count other than "
                f"the response length for sequences {short}"
            )
        return tokens

    async def _results(self, prompts, responses) -> list:
        """The reply's results in request order; a missing id or a non-finite sum is an error."""
        request = reference_pb2.ComputeLogprobsRequest(
            sequences=[
                reference_pb2.TokenSequence(id=str(i), prompt_token_ids=pack_int32(p), response_token_ids=pack_int32(r))
                for i, (p, r) in enumerate(zip(prompts, responses))
            ]
        )
        reply = await self.stub.ComputeLogprobs(request, timeout=self.timeout_s)
        by_id = {res.id: res for res in reply.results}
        missing = [i for i in range(len(prompts)) if str(i) not in by_id]
        if missing:
            raise ReferenceError(f"reference at {self.address} returned no result for sequences {missing}")
        bad = [i for i in range(len(prompts)) if not math.isfinite(by_id[str(i)].sum_logprob)]
        if bad:
            raise ReferenceError(f"reference at {self.address} returned non-finite log-probs for sequences {bad}")
        return [by_id[str(i)] for i in range(len(prompts))]

    async def close(self) -> None:
        await self.channel.close()
