"""`meshrl serve SERVICE --nats URL --run-id RUN --config FILE [...]`: run one service here.

For cluster use (one container per service). The service's module is found by name
(`meshrl.services.<SERVICE>`) and exec'd, so the core CLI never imports any service.
Extra arguments (e.g. `--replica-id rollout-3`) are passed through unchanged.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from meshrl import topology
from meshrl.cli import about
from meshrl.errors import LaunchError
from meshrl.service.args import nats_url

SERVICES = tuple(topology.KINDS)


def add_parser(sub) -> None:
    p = sub.add_parser(
        "serve", help=about("serve"), description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("service", help=f"one of: {', '.join(SERVICES)}")
    # Checked after the service name, so a wrong name is reported first.
    p.add_argument("--nats", type=nats_url, help="NATS url, e.g. nats://nats:4222 (required)")
    p.add_argument("--run-id", help="run id (required)")
    p.add_argument("--config", type=Path, help="resolved run config YAML (required)")
    p.set_defaults(func=run, accepts_extra_args=True)


def service_module(name: str) -> str:
    """`meshrl.services.<name>`, after checking the name and that the module is installed."""
    if name not in SERVICES:
        raise LaunchError(f"unknown service {name!r}; known services: {', '.join(SERVICES)}")
    module = f"meshrl.services.{name}"
    if importlib.util.find_spec(module) is None:
        raise LaunchError(f"service module {module} is not installed; reinstall meshrl")
    return module


def command(args) -> list[str]:
    module = service_module(args.service)
    missing = [
        flag
        for flag, value in (("--nats", args.nats), ("--run-id", args.run_id), ("--config", args.config))
        if not value
    ]
    if missing:
        raise LaunchError(
            f"meshrl serve {args.service} needs {' '.join(missing)} "
            f"(usage: meshrl serve SERVICE --nats URL --run-id RUN --config FILE)"
        )
    if not args.config.exists():
        raise LaunchError(f"--config {args.config} does not exist")
    return [
        sys.executable,
        "-m",
        module,
        "--nats",
        args.nats,
        "--run-id",
        args.run_id,
        "--config",
        str(args.config),
        *args.extra,
    ]


def run(args) -> int:
    argv = command(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(argv[0], argv)  # replaces this process: signals go straight to the service
    return 0  # not reached
