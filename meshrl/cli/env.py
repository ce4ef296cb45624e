"""`meshrl env check ADDRESS`: run the conformance kit against an environment service.

    meshrl env check localhost:50090 --environment tool_arith --task row.json
    meshrl env check env.internal:443 --tls-ca ca.pem --tls-cert client.pem --tls-key client.key \\
        --token-file /run/secrets/env-token --environment my_env --timeout 30

Prints a table (PASS / FAIL / INFO per check, with a fix under each failure; see
meshrl.cli.env_check) and exits 0 when every check passed, 1 when any failed, 2 for a usage
error (an unreadable file), so a team can run it in its own CI. --task gives the kit one
dataset row (JSON: prompt, reward_model.ground_truth, data_source, extra_info) to reset
episodes with, for an environment that needs particular fields.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from meshrl.cli.quiet_grpc import quiet_grpc_logs

quiet_grpc_logs()  # before grpc is imported (below): C-core reads the variables as it loads

from meshrl.cli import about  # noqa: E402
from meshrl.cli.env_check import load_task, run_suite  # noqa: E402
from meshrl.cli.reward import add_connection_flags  # noqa: E402
from meshrl.cli.reward_check import any_failed, format_table  # noqa: E402
from meshrl.cli.reward_check.connect import connect_from_args, probe_from_args  # noqa: E402


def add_parser(sub) -> None:
    p = sub.add_parser(
        "env", help=about("env"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    verbs = p.add_subparsers(dest="env_command", required=True, metavar="VERB")
    c = verbs.add_parser(
        "check",
        help="run the conformance suite against an EnvironmentService",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    c.add_argument("address", help="host:port of the environment service")
    c.add_argument("--environment", default="", help="ResetRequest.environment (the run config's environment.name)")
    c.add_argument("--task", help="a dataset row as JSON to reset episodes with (default: What is 3+4?, truth 7)")
    add_connection_flags(c)
    c.add_argument("--timeout", type=float, default=30.0, help="deadline per call, seconds (default 30)")
    c.set_defaults(func=run)


async def check(args: argparse.Namespace) -> int:
    task = load_task(args.task, args.environment)
    channel, metadata = connect_from_args(args, "meshrl env check")
    async with channel:
        rows = await run_suite(
            channel, task=task, timeout_s=args.timeout, metadata=metadata, probe=probe_from_args(args)
        )
    print(f"meshrl env check {args.address}" + (f" (environment {args.environment!r})" if args.environment else ""))
    print(format_table(rows))
    return 1 if any_failed(rows) else 0


def run(args: argparse.Namespace) -> int:
    return asyncio.run(check(args))


if __name__ == "__main__":
    sys.exit(print("use: meshrl env check ADDRESS") or 2)
