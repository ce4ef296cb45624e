"""Run the gateway: the run API over gRPC and HTTP/JSON, and the dashboard, on one event loop.

    MESHRL_GATEWAY_TOKENS_FILE=tokens.yaml meshrl gateway serve --runs-root runs --port 8080 --grpc-port 8081

Then open http://127.0.0.1:8080/ and log in with a token. `--host` defaults to 127.0.0.1:
put it behind a TLS-terminating proxy before serving beyond this machine (tokens travel in
clear otherwise). Ports 0 pick free ones; the line `gateway: http://...  grpc ...` says which.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from meshrl.errors import LaunchError
from meshrl.gateway.api.dispatch import Dispatcher
from meshrl.gateway.api.grpc_server import TokenGate, gateway_registration
from meshrl.gateway.api.handlers import Handlers
from meshrl.gateway.api.http_app import make_app
from meshrl.gateway.auth.tenant import TenantPolicy
from meshrl.gateway.auth.tokens import TokenAuth, load_tokens
from meshrl.gateway.limits import MAX_REQUEST_BYTES
from meshrl.gateway.runs.root import RunsRoot
from meshrl.transport.rpc.server import start_server, stop_server


@dataclass
class Gateway:
    runner: web.AppRunner
    grpc_server: object
    http_port: int
    grpc_port: int

    async def stop(self) -> None:
        await stop_server(self.grpc_server, grace=1.0)
        await self.runner.cleanup()


async def start_gateway(
    runs_root: Path,
    auth: TokenAuth,
    *,
    host: str = "127.0.0.1",
    http_port: int = 0,
    grpc_port: int = 0,
    tenants: TenantPolicy | None = None,
) -> Gateway:
    dispatcher = Dispatcher(Handlers(RunsRoot(runs_root), tenants), auth)
    server, bound = await start_server(
        [gateway_registration(dispatcher)],
        port=grpc_port,
        host=host,
        interceptors=[TokenGate(auth)],
        max_receive_bytes=MAX_REQUEST_BYTES,
    )
    try:
        runner, port = await start_http(dispatcher, host, http_port)
    except BaseException:  # the HTTP port is taken: the gRPC server started above goes too
        await stop_server(server, grace=0)
        raise
    return Gateway(runner, server, port, bound)


async def start_http(dispatcher: Dispatcher, host: str, port: int) -> tuple[web.AppRunner, int]:
    """The HTTP app listening on host:port; (its runner, the bound port when 0 was asked)."""
    # Open event streams (dashboards following a live run) never end by themselves: on stop,
    # give them a second, then close them.
    runner = web.AppRunner(make_app(dispatcher), access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner, site._server.sockets[0].getsockname()[1]


async def serve_forever(args) -> None:
    tenants = TenantPolicy(roots=list(args.tenant_root), hosts=list(args.tenant_host), env_names=list(args.tenant_env))
    try:
        gateway = await start_gateway(
            args.runs_root,
            TokenAuth(load_tokens()),
            host=args.host,
            http_port=args.port,
            grpc_port=args.grpc_port,
            tenants=tenants,
        )
    except (OSError, RuntimeError) as err:  # a port taken, an address not this host's (grpc: RuntimeError)
        raise LaunchError(
            f"gateway serve cannot listen on {args.host} (--port {args.port}, --grpc-port "
            f"{args.grpc_port}): {err}; pick free ports (0 picks one) or another --host"
        ) from None
    print(
        f"gateway: http://{args.host}:{gateway.http_port}/  grpc {args.host}:{gateway.grpc_port}  "
        f"runs {Path(args.runs_root).resolve()}",
        flush=True,
    )
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    await stop.wait()
    await gateway.stop()
