"""Serve `ReferenceService.ComputeLogprobs` (see servicer) with gRPC health and reflection.

`start_reference_server(scorer, port)` → (server, bound port); port 0 picks a free one.
Built on `meshrl.transport.rpc.start_server` (health per service, reflection, 64 MiB messages: a DPO
batch of long pairs outgrows gRPC's 4 MiB default). It listens on every interface by
default, since in a cluster the learner reaches it from another pod.
"""

from __future__ import annotations

from grpc import aio

from meshrl.api.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.transport.rpc import registration, start_server
from meshrl.services.reference.scorer import ReferenceScorer
from meshrl.services.reference.servicer import ReferenceServicer

SERVICE = reference_pb2.DESCRIPTOR.services_by_name["ReferenceService"]
SERVICE_NAME = SERVICE.full_name


async def start_reference_server(
    scorer: ReferenceScorer, port: int = 0, host: str | None = None
) -> tuple[aio.Server, int]:
    reg = registration(reference_pb2_grpc.add_ReferenceServiceServicer_to_server, ReferenceServicer(scorer), SERVICE)
    return await start_server([reg], port=port, host=host)
