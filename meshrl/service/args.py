"""The flags every service process takes, plus the ones its ServiceProcess adds.

    --nats URL --run-id RUN --config RUN_DIR/config.yaml [--replica-id ID]

The launcher (meshrl.launch.local) and `meshrl serve` start services with exactly
these; an empty --run-id, or a --nats URL holding credentials, is refused here, naming the
flag (argparse exits 2).
"""

from __future__ import annotations

import argparse

from meshrl.config.secrets import check_no_credentials


def nats_url(value: str) -> str:
    """--nats: a URL without user:password@ (it would show in `ps` to every local user)."""
    try:
        return check_no_credentials(value, "--nats")
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--nats ")) from None


def run_id(value: str) -> str:
    if not value.strip():
        raise argparse.ArgumentTypeError(
            "is empty: pass the run's id (the launcher's run id, e.g. grpo-20250101-120000)"
        )
    return value


def parse_service_args(process, argv: list[str] | None = None, description: str = "") -> argparse.Namespace:
    """The shared flags and `process.add_arguments`'s, parsed from argv (default sys.argv)."""
    p = argparse.ArgumentParser(prog=f"python -m meshrl.services.{process.name}", description=description)
    p.add_argument("--nats", required=True, type=nats_url, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True, type=run_id)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default=None, help=f"default: {process.default_replica or process.name + '-<pid>'}")
    process.add_arguments(p)
    return p.parse_args(argv)
