"""Serve `ReferenceService.ComputeLogprobs` (see servicer) with gRPC health and reflection.

`start_reference_server(scorer, port)` → (server, bound port); port 0 picks a free one.
"""
from __future__ import annotations

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from meshrl.reference.v1 import reference_pb2, reference_pb2_grpc
from meshrl.services.reference.scorer import ReferenceScorer
from meshrl.services.reference.servicer import ReferenceServicer

SERVICE_NAME = reference_pb2.DESCRIPTOR.services_by_name["ReferenceService"].full_name
MAX_MESSAGE = 64 * 1024 * 1024  # a DPO batch of long pairs outgrows gRPC's 4 MiB default


async def start_reference_server(scorer: ReferenceScorer, port: int = 0,
                                 host: str = "[::]") -> tuple[grpc.aio.Server, int]:
    options = [("grpc.max_receive_message_length", MAX_MESSAGE),
               ("grpc.max_send_message_length", MAX_MESSAGE)]
    server = grpc.aio.server(options=options)
    reference_pb2_grpc.add_ReferenceServiceServicer_to_server(ReferenceServicer(scorer), server)
    health_servicer = health.aio.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"could not bind the ReferenceService to {host}:{port} (port in use?)")
    await server.start()
    for name in ("", SERVICE_NAME):
        await health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    return server, bound
