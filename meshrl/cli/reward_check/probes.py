"""grpc.health.v1 (required) and server reflection (optional) rows, for any meshrl contract
(the reward kit's RewardService by default; the environment kit passes EnvironmentService).
A health call that cannot connect is explained by a `TlsProbe` when one is given (plaintext
against TLS, a refused certificate, no client certificate, nothing listening): that row is
`blocking`, and the suite stops there."""

from __future__ import annotations

from grpc import StatusCode, aio
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from meshrl.cli.reward_check.table import FAIL, INFO, PASS, Row
from meshrl.cli.reward_check.tls_probe import TlsProbe

SERVICE = "meshrl.reward.v1.RewardService"


def health_fix(service: str = SERVICE, sdk: str = "meshrl.reward_sdk") -> str:
    return (
        f"serve grpc.health.v1.Health with status SERVING for '' (and for '{service}'): meshrl checks "
        f"it before a run starts and refuses an unhealthy service. Python: grpc_health.v1.health ({sdk} "
        f"does it); Node: grpc-health-check; Go: google.golang.org/grpc/health"
    )


HEALTH_FIX = health_fix()


async def health_row(
    channel: aio.Channel,
    metadata: tuple = (),
    timeout_s: float = 5.0,
    *,
    service: str = "",
    fix: str = HEALTH_FIX,
    probe: TlsProbe | None = None,
) -> Row:
    """Check(`service`) answers SERVING ("" = the whole server)."""
    stub = health_pb2_grpc.HealthStub(channel)
    name = "health (grpc.health.v1)" + (f" for {service.rsplit('.', 1)[-1]}" if service else "")
    try:
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout_s, metadata=metadata)
    except aio.AioRpcError as err:
        found = await probe.diagnose(timeout_s) if probe and err.code() == StatusCode.UNAVAILABLE else None
        if found:
            return Row(name, FAIL, found[0], found[1], blocking=True)
        what = (
            "no health service (UNIMPLEMENTED)"
            if err.code() == StatusCode.UNIMPLEMENTED
            else f"{err.code().name}: {err.details()}"
        )
        return Row(name, FAIL, what, fix)
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if reply.status != health_pb2.HealthCheckResponse.SERVING:
        return Row(name, FAIL, f"status {status}", fix)
    return Row(name, PASS, "SERVING")


async def reflection_row(
    channel: aio.Channel, metadata: tuple = (), timeout_s: float = 5.0, *, service: str = SERVICE
) -> Row:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    ask = reflection_pb2.ServerReflectionRequest(list_services="")
    try:
        call = stub.ServerReflectionInfo(iter([ask]), timeout=timeout_s, metadata=metadata)
        names = [s.name async for reply in call for s in reply.list_services_response.service]
    except aio.AioRpcError as err:
        return Row(
            "reflection (optional)",
            INFO,
            f"not served ({err.code().name}); optional: it lets grpcurl and the kit list your services",
        )
    short = service.rsplit(".", 1)[-1]
    listed = f"{short} listed" if service in names else f"{short} not listed ({names})"
    return Row("reflection (optional)", INFO, f"served; {listed}")
