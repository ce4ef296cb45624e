"""`meshrl health ADDRESS`: exit 0 for a SERVING meshrl gRPC server, 1 for NOT_SERVING or an
unknown service, 2 when nothing listens (the container health check of deploy/).

    .venv/bin/python -m pytest -q tests/deploy/test_health_cli.py
"""

import asyncio
import socket
import subprocess
import sys

from grpc_health.v1 import health_pb2

from meshrl.cli.health import check
from meshrl.transport.rpc.server import start_server, stop_server


async def in_thread(*args):
    return await asyncio.to_thread(check, *args)


async def test_serving_not_serving_and_unknown_service():
    server, port = await start_server([], port=0)
    address = f"127.0.0.1:{port}"
    try:
        assert await in_thread(address, "", 3.0) == (0, f"{address}: SERVING")
        code, line = await in_thread(address, "meshrl.nope.v1.NopeService", 3.0)
        assert code == 1 and "SERVICE_UNKNOWN" in line
        await server.health.set("", health_pb2.HealthCheckResponse.NOT_SERVING)
        assert await in_thread(address, "", 3.0) == (1, f"{address}: NOT_SERVING")
    finally:
        await stop_server(server, grace=0)


def test_nothing_listening_exits_2_through_the_cli():
    with socket.socket() as held:  # bound, never listening: refused, and no other process can take it meanwhile
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "meshrl.cli.main", "health", f"127.0.0.1:{port}", "--timeout", "0.5"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2, done
    assert f"127.0.0.1:{port}: no answer within 0.5 s" in done.stderr
