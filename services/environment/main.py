"""The environment service: meshrl's built-in environments on a gRPC port.

As one of the mesh's services (what `meshrl train` starts for a run whose `environment`
names a `builtin`; process.py):

    python -m meshrl.services.environment --nats URL --run-id RUN --config RUN_DIR/config.yaml

Or standalone, with its settings as flags:

    python -m meshrl.services.environment --port 50090 [--environments tool_arith,calculator,python]
        [--max-episodes 256] [--sandbox-cpu-s 5] [--sandbox-wall-s 10] [--sandbox-memory-mb 1024]
        [--hide PATH ...]

Each entry of --environments is a built-in (registry.py) or ALIAS=BUILTIN to serve it under
the run config's environment.name. TLS from MESHRL_GRPC_TLS_CERT_FILE/_KEY_FILE, a bearer
token from MESHRL_ENV_TOKEN_FILE or MESHRL_ENV_TOKEN (env_sdk). Exit 2 with one line on
stderr for a bad flag, an unknown built-in, or a python tool this host cannot sandbox.
Point a run at it with `environment: {name: tool_arith, address: "host:50090"}`.
"""

from __future__ import annotations

import argparse
import logging
import sys

from meshrl.config import ConfigError
from meshrl.env_sdk import serve
from meshrl.service import run_service
from meshrl.services.environment.process import EnvironmentProcess
from meshrl.services.environment.process import __doc__ as process_doc
from meshrl.services.environment.registry import Builtins, environments
from meshrl.services.environment.sandbox import SandboxLimits, SandboxUnavailable

DEFAULT = "tool_arith,calculator,python"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default=None, help="bind address (default: MESHRL_BIND_HOST or 127.0.0.1)")
    parser.add_argument("--environments", default=DEFAULT, help=f"comma-separated (default {DEFAULT})")
    parser.add_argument("--max-episodes", type=int, default=256, help="open episodes per replica")
    parser.add_argument("--sandbox-cpu-s", type=int, default=5)
    parser.add_argument("--sandbox-wall-s", type=float, default=10.0)
    parser.add_argument("--sandbox-memory-mb", type=int, default=1024)
    parser.add_argument("--sandbox-isolation", choices=["auto", "root", "userns"], default="auto")
    parser.add_argument("--hide", action="append", default=[], help="a path the python sandbox must not see")
    parser.add_argument(
        "--check",
        action="store_true",
        help="build the environments (the python tool: its sandbox) and exit: 0 and what was built, "
        "or 2 and why not (meshrl doctor runs this)",
    )
    return parser.parse_args(argv)


def built(args: argparse.Namespace) -> tuple[dict, Builtins]:
    limits = SandboxLimits(
        cpu_s=args.sandbox_cpu_s, wall_s=args.sandbox_wall_s, memory_bytes=args.sandbox_memory_mb << 20
    )
    ctx = Builtins(limits=limits, isolation_mode=args.sandbox_isolation, hide=args.hide)
    return environments([n.strip() for n in args.environments.split(",") if n.strip()], ctx), ctx


def check_line(served: dict, ctx: Builtins) -> str:
    """What --check prints: the environments, and the sandbox's isolation when one was made."""
    made = ctx.__dict__.get("sandbox")  # a cached_property: present only when the python tool needed it
    return f"can serve {', '.join(served)} here" + (f" (python sandbox: {made.isolation.mode} mode)" if made else "")


def main(argv: list[str] | None = None) -> int:
    """The mesh's contract (`--config`: process.py) or standalone."""
    if "--config" in (sys.argv[1:] if argv is None else argv):
        return run_service(EnvironmentProcess(), argv, description=process_doc.splitlines()[0])
    return main_standalone(argv)


def main_standalone(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    try:
        served, ctx = built(args)
        if args.check:
            print(check_line(served, ctx))
            return 0
        serve(served, port=args.port, host=args.host, name="environment", max_episodes=args.max_episodes)
    except (ValueError, SandboxUnavailable, ConfigError, OSError) as err:
        print(f"environment service: {err}", file=sys.stderr)
        return 2
    return 0
