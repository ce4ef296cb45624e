"""meshrl.transport.rpc: grpc.aio helpers every service uses.

- server.start_server: health (grpc.health.v1) + reflection + 64 MiB message limits;
  stop_serving: NOT_SERVING everywhere (a service that can no longer serve); stop_server.
- channel.open_channel: retries only UNAVAILABLE, 64 MiB limits, deadline required.
- channel.wait_healthy: wait until a server reports SERVING.

Every client call in meshrl passes a deadline: `await stub.Score(req, timeout=5.0)`.
Channels from open_channel reject a call without one (deadline.RequireDeadline).
"""

from meshrl.transport.rpc.channel import ServiceUnhealthy, open_channel, wait_healthy
from meshrl.transport.rpc.deadline import MissingDeadline, RequireDeadline
from meshrl.transport.rpc.server import Registration, registration, start_server, stop_server, stop_serving

__all__ = [
    "ServiceUnhealthy",
    "open_channel",
    "wait_healthy",
    "MissingDeadline",
    "RequireDeadline",
    "Registration",
    "registration",
    "start_server",
    "stop_server",
    "stop_serving",
]
