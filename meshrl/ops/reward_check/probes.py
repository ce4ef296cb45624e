"""grpc.health.v1 (required) and server reflection (optional) rows."""
from __future__ import annotations

from grpc import StatusCode, aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.ops.reward_check.table import FAIL, INFO, PASS, Row

SERVICE = "meshrl.reward.v1.RewardService"
HEALTH_FIX = ("serve grpc.health.v1.Health with status SERVING for '' (and for "
              f"'{SERVICE}'): meshrl checks it before a run starts and refuses an unhealthy service. "
              "Python: grpc_health.v1.health (meshrl.reward_sdk does it); Node: grpc-health-check; "
              "Go: google.golang.org/grpc/health")


async def health_row(channel: aio.Channel, metadata: tuple = (), timeout_s: float = 5.0) -> Row:
    stub = health_pb2_grpc.HealthStub(channel)
    try:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s, metadata=metadata)
    except aio.AioRpcError as err:
        what = "no health service (UNIMPLEMENTED)" if err.code() == StatusCode.UNIMPLEMENTED else \
            f"{err.code().name}: {err.details()}"
        return Row("health (grpc.health.v1)", FAIL, what, HEALTH_FIX)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        return Row("health (grpc.health.v1)", FAIL, f"status {status}", HEALTH_FIX)
    return Row("health (grpc.health.v1)", PASS, "SERVING")


async def reflection_row(channel: aio.Channel, metadata: tuple = (), timeout_s: float = 5.0) -> Row:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    ask = reflection_pb2.ServerReflectionRequest(list_services="")
    try:
        call = stub.ServerReflectionInfo(iter([ask]), timeout=timeout_s, metadata=metadata)
        names = [s.name async for reply in call for s in reply.list_services_response.service]
    except aio.AioRpcError as err:
        return Row("reflection (optional)", INFO, f"not served ({err.code().name}); optional: it lets "
                   "grpcurl and the kit list your services")
    listed = "RewardService listed" if SERVICE in names else f"RewardService not listed ({names})"
    return Row("reflection (optional)", INFO, f"served; {listed}")
