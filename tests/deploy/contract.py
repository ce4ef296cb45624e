"""The command-line contract the deploy files must keep, read from the code itself (a helper
for tests/deploy/test_compose.py and tests/deploy/test_k8s.py, not a test):

- `serve_argv(args)`: a container's command as the entrypoint sees it (SERVICE [flags...])
  checked the way the real code parses it: SERVICE in meshrl.cli.serve.SERVICES, every
  flag known to that service's own argparse (meshrl.service.args + its ServiceProcess);
  returns the parsed flags.
- `grpc_port(service, flags, cfg, replica_id)`: the port that service will listen on.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io

from meshrl.cli.serve import SERVICES
from meshrl.service import ServiceProcess
from meshrl.service.args import parse_service_args

# What the entrypoint adds in front of the container's own flags (deploy/image/entrypoint.sh).
ENTRYPOINT_FLAGS = ["--nats", "nats://x:4222", "--run-id", "r", "--config", "/c.yaml", "--replica-id", "x"]
ENTRYPOINT_ENV = ("MESHRL_NATS_URL", "MESHRL_RUN_ID", "MESHRL_CONFIG")


def service_process(service: str) -> ServiceProcess:
    module = importlib.import_module(f"meshrl.services.{service}.main")
    kinds = [
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, ServiceProcess) and v is not ServiceProcess
    ]
    assert len(kinds) == 1, f"meshrl.services.{service}.main defines {kinds}"
    return kinds[0]()


def serve_argv(args: list[str]) -> tuple[str, argparse.Namespace]:
    """(service, parsed flags) for a container's args; fails naming what is wrong."""
    assert args and args[0] in SERVICES, f"{args[:1]} is not a service of `meshrl serve` ({SERVICES})"
    service, flags = args[0], list(args[1:])
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            parsed = parse_service_args(service_process(service), [*ENTRYPOINT_FLAGS, *flags])
    except SystemExit:
        raise AssertionError(f"`{service}` does not take {flags}: {err.getvalue().strip()}") from None
    return service, parsed


def grpc_port(service: str, flags: argparse.Namespace, cfg, replica_id: str) -> int:
    """Where `service` serves gRPC with these flags, this RunConfig and this replica id."""
    if (
        service in ("rollout", "reward", "reward_model", "environment")
        and getattr(flags, "grpc_port", None) is not None
    ):
        return flags.grpc_port
    if service == "environment" and cfg.environment.grpc_port:
        return cfg.environment.grpc_port
    if service == "reward_model":
        return cfg.reward_model.grpc_port
    if service == "rollout":
        return cfg.rollout.grpc_port
    if service == "reference":
        from meshrl.services.reference.main import grpc_port as reference_port

        return reference_port(cfg.reference.grpc_port, replica_id)
    if service == "learner":
        return cfg.learner.grpc_port
    raise AssertionError(f"{service}: no fixed gRPC port (pass --grpc-port)")
