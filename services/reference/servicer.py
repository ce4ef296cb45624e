"""`ReferenceService.ComputeLogprobs`: reference log-probs of given sequences over gRPC (DPO).

Each `TokenSequence` carries packed int32 prompt and response ids; each result carries
packed float32 per-token log-probs and their sum, log π_ref(response | prompt), which is
what DPO's loss needs. Bad input (ids outside the vocab, an empty prompt, bytes that are not
int32) is INVALID_ARGUMENT with the reason; the forward runs in a worker thread so the
event loop keeps serving health checks meanwhile.

`start_reference_server(scorer, port)` → (server, bound port); port 0 picks a free one.
Built on `meshrl.transport.rpc.start_server` (health per service, reflection, 64 MiB messages: a DPO
batch of long pairs outgrows gRPC's 4 MiB default). It listens on every interface by
default, since in a cluster the learner reaches it from another pod. No torch here (the
scorer is passed in), so the service's main imports this module at its top.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import grpc
import numpy as np
from grpc import aio

from meshrl.api.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.transport.bus.codec import pack_float32, unpack_int32
from meshrl.transport.rpc import registration, start_server

if TYPE_CHECKING:
    from meshrl.services.reference.scorer import ReferenceScorer

SERVICE = reference_pb2.DESCRIPTOR.services_by_name["ReferenceService"]
SERVICE_NAME = SERVICE.full_name


def to_results(
    request: reference_pb2.ComputeLogprobsRequest, logprobs: list[np.ndarray]
) -> reference_pb2.ComputeLogprobsResponse:
    return reference_pb2.ComputeLogprobsResponse(
        results=[
            reference_pb2.SequenceLogprobs(
                id=seq.id, logprobs=pack_float32(lp), sum_logprob=float(lp.sum(dtype=np.float64))
            )
            for seq, lp in zip(request.sequences, logprobs)
        ]
    )


class ReferenceServicer(reference_pb2_grpc.ReferenceServiceServicer):
    def __init__(self, scorer: ReferenceScorer):
        self.scorer = scorer

    async def ComputeLogprobs(
        self, request: reference_pb2.ComputeLogprobsRequest, context
    ) -> reference_pb2.ComputeLogprobsResponse:
        try:
            prompts = [unpack_int32(s.prompt_token_ids) for s in request.sequences]
            responses = [unpack_int32(s.response_token_ids) for s in request.sequences]
            logprobs = await asyncio.to_thread(self.scorer.score, prompts, responses)
        except ValueError as err:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        return to_results(request, logprobs)


async def start_reference_server(
    scorer: ReferenceScorer, port: int = 0, host: str | None = None
) -> tuple[aio.Server, int]:
    reg = registration(reference_pb2_grpc.add_ReferenceServiceServicer_to_server, ReferenceServicer(scorer), SERVICE)
    return await start_server([reg], port=port, host=host)
