"""`meshrl gateway serve --runs-root DIR --port N --grpc-port M`: the CLI verb. The server
(aiohttp, grpc) is imported only when it runs, so other `meshrl` commands start fast.

    MESHRL_GATEWAY_TOKENS_FILE=tokens.yaml meshrl gateway serve --runs-root runs --port 8080
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from meshrl.cli import about
from meshrl.config.secrets import check_env_name
from meshrl.config.values import MAX_PORT
from meshrl.errors import ConfigError

ENV_VAR = "MESHRL_GATEWAY_TOKENS_FILE"


def check_start(args) -> None:
    """Every start-up problem as one ConfigError (main prints it on one line, exit 2): ports,
    the runs root, the tokens file, the tenant roots, hosts and variables."""
    from meshrl.gateway.auth.tokens import load_tokens
    from meshrl.gateway.runs.root import RunsRoot

    for flag, port in (("--port", args.port), ("--grpc-port", args.grpc_port)):
        if not 0 <= port <= MAX_PORT:
            raise ConfigError(f"gateway serve {flag}={port}: a port is 0..{MAX_PORT} (0 picks a free one)")
    if args.port == args.grpc_port != 0:
        raise ConfigError(f"gateway serve --port and --grpc-port are both {args.port}; give each its own")
    try:
        RunsRoot(args.runs_root)
        load_tokens()
    except ValueError as err:
        raise ConfigError(str(err)) from None
    check_tenants(args)


def check_tenants(args) -> None:
    """--tenant-root folders that exist, --tenant-host HOST[:PORT], --tenant-env NAME."""
    for root in args.tenant_root:
        if not root.is_dir():
            raise ConfigError(f"gateway serve --tenant-root {root}: not a directory; name an existing folder")
    for host in args.tenant_host:
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        if (
            not name
            or not name.isprintable()
            or any(c in name for c in "/@ ")
            or (port and not (port.isdigit() and 1 <= int(port) <= MAX_PORT))
        ):
            raise ConfigError(f"gateway serve --tenant-host {host!r}: expected HOST or HOST:PORT (port 1..{MAX_PORT})")
    for name in args.tenant_env:
        try:
            check_env_name(name, "--tenant-env")
        except ValueError as err:
            raise ConfigError(f"gateway serve {err}") from None


def run(args) -> int:
    from meshrl.gateway.serve import serve_forever

    check_start(args)
    asyncio.run(serve_forever(args))
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser(
        "gateway", help=about("gateway"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    verbs = p.add_subparsers(dest="gateway_command", required=True, metavar="ACTION")
    s = verbs.add_parser("serve", help=f"serve the run API (gRPC, HTTP/JSON) and dashboard; tokens from ${ENV_VAR}")
    s.add_argument("--runs-root", type=Path, required=True, help="the folder whose subfolders are runs")
    s.add_argument("--port", type=int, default=8080, help="HTTP port (dashboard and JSON API); 0 picks one")
    s.add_argument("--grpc-port", type=int, default=8081, help="gRPC port; 0 picks one")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    add_tenant_flags(s)
    s.set_defaults(func=run)


def add_tenant_flags(serve) -> None:
    """What a run submitted through SubmitRun may reach (gateway/auth/tenant.py); none by default."""
    serve.add_argument(
        "--tenant-root",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder submitted runs' files (data, models, token files) may lie in; repeat for more",
    )
    serve.add_argument(
        "--tenant-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a host submitted runs may reach (webhooks, external rewards, OTLP, NATS); repeat for more",
    )
    serve.add_argument(
        "--tenant-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable passed to submitted runs (a token_env they name); repeat for more",
    )
