"""`meshrl reward check ADDRESS`: run the conformance kit against a reward service.

    meshrl reward check localhost:50070
    meshrl reward check judge.internal:443 --tls-ca ca.pem --tls-cert client.pem --tls-key client.key \\
        --token-file /run/secrets/judge-token --component judge

Prints a table (PASS / FAIL / INFO per check, with a fix under each failure; see
meshrl.cli.reward_check) and exits 0 when every check passed, 1 when any failed, 2 for a
usage error (an unreadable file), so a team can run it in its own CI.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from meshrl.cli.quiet_grpc import quiet_grpc_logs

quiet_grpc_logs()  # before grpc is imported (below): C-core reads the variables as it loads

from meshrl.cli import about  # noqa: E402
from meshrl.cli.reward_check import any_failed, format_table, run_suite  # noqa: E402
from meshrl.cli.reward_check.connect import connect_from_args, probe_from_args  # noqa: E402


def add_connection_flags(parser) -> None:
    """--tls-ca, --tls-cert, --tls-key, --server-name and --token-file (both kits' CLIs)."""
    parser.add_argument("--tls-ca", help="CA certificate (PEM) to verify a TLS server")
    parser.add_argument("--tls-cert", help="client certificate (PEM) for mutual TLS")
    parser.add_argument("--tls-key", help="client private key (PEM) for mutual TLS")
    parser.add_argument("--server-name", help="TLS name to verify when it differs from ADDRESS's host")
    parser.add_argument("--token-file", help="file holding a bearer token, sent as 'authorization: Bearer ...'")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reward", help=about("reward"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    verbs = p.add_subparsers(dest="reward_command", required=True, metavar="VERB")
    c = verbs.add_parser(
        "check",
        help="run the conformance suite against a RewardService",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("address", help="host:port of the reward service")
    add_connection_flags(c)
    c.add_argument("--component", default="", help="ScoreRequest.component to send (the run config's name)")
    c.add_argument("--timeout", type=float, default=30.0, help="deadline per Score call, seconds (default 30)")
    c.set_defaults(func=run)


async def check(args: argparse.Namespace) -> int:
    channel, metadata = connect_from_args(args, "meshrl reward check")
    async with channel:
        rows = await run_suite(
            channel,
            component=args.component,
            timeout_s=args.timeout,
            metadata=metadata,
            probe=probe_from_args(args),
        )
    print(f"meshrl reward check {args.address}" + (f" (component {args.component!r})" if args.component else ""))
    print(format_table(rows))
    return 1 if any_failed(rows) else 0


def run(args: argparse.Namespace) -> int:
    return asyncio.run(check(args))


if __name__ == "__main__":
    sys.exit(print("use: meshrl reward check ADDRESS") or 2)
