"""`meshrl gateway serve --runs-root DIR --port N --grpc-port M`: the CLI verb. The server
(aiohttp, grpc) is imported only when it runs, so other `meshrl` commands start fast.

    MESHRL_GATEWAY_TOKENS_FILE=tokens.yaml meshrl gateway serve --runs-root runs --port 8080
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from meshrl.cli import about

ENV_VAR = "MESHRL_GATEWAY_TOKENS_FILE"


def run(args) -> int:
    from meshrl.gateway.auth import load_tokens
    from meshrl.gateway.runs import RunsRoot
    from meshrl.gateway.serve import serve_forever

    RunsRoot(args.runs_root)  # a ValueError names what is wrong (main prints it, exit 2)
    load_tokens()
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
    # What a run submitted through SubmitRun may reach (gateway/tenant.py); none by default.
    s.add_argument(
        "--tenant-root",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a folder submitted runs' files (data, models, token files) may lie in; repeat for more",
    )
    s.add_argument(
        "--tenant-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="a host submitted runs may reach (webhooks, external rewards, OTLP, NATS); repeat for more",
    )
    s.add_argument(
        "--tenant-env",
        action="append",
        default=[],
        metavar="NAME",
        help="an environment variable passed to submitted runs (a token_env they name); repeat for more",
    )
    s.set_defaults(func=run)
