"""The environment service as a mesh service: what `meshrl train` and `meshrl serve` start.

    python -m meshrl.services.environment --nats URL --run-id RUN --config RUN_DIR/config.yaml \
        [--replica-id environment-0] [--grpc-port PORT]

Run by the shared service runner, like the other services:
  1. load the RunConfig; its `environment` section (meshrl/config/environment.py) names the
     built-in to serve under the run's environment name (with or without an `address`: that
     is where the rollout calls it); no `builtin` is a ConfigError (exit 2); so is a `python`
     built-in this host cannot sandbox;
  2. connect to NATS, serve EnvironmentService (+ health, reflection; meshrl.env_sdk) on
     --grpc-port, else environment.grpc_port (0 = a free port: each replica its own, since an
     episode lives on the replica that reset it), with the run's TLS (MESHRL_GRPC_TLS_*) and
     bearer token (MESHRL_ENV_TOKEN_FILE) when the launcher gives them, and put its address
     under the run KV key `services.environment.<replica>`, where the rollout finds it; its
     metrics endpoint adds meshrl_env_open_episodes and meshrl_env_max_episodes;
  3. serve until SIGTERM/SIGINT: NOT_SERVING first (callers drain away), then stop and close
     every open episode.
The python sandbox never sees the run dir or any file named by a *_FILE variable (secrets).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from pathlib import Path

from meshrl.config import ConfigError
from meshrl.env_sdk import start as start_env_server
from meshrl.env_sdk import stop as stop_env_server
from meshrl.service import ServiceContext, ServiceProcess
from meshrl.services.environment.adapters.served import adapter_environments
from meshrl.services.environment.registry import Builtins, environments
from meshrl.services.environment.sandbox import SandboxLimits, SandboxUnavailable

log = logging.getLogger("meshrl.services.environment")


def settings_of(cfg):
    """The run's environment section when it names a built-in; a ConfigError otherwise."""
    settings = cfg.environment
    if settings is None or not (settings.builtin or settings.adapter):
        raise ConfigError(
            "the run config has no `environment: {name: ..., builtin: ...}` section: the "
            "environment service serves meshrl's built-in environments (an "
            "environment.address without builtin is a service of its own)"
        )
    return settings


def secret_paths(environ=os.environ) -> list[str]:
    """Files the sandbox must not see: every path a *_FILE variable names (tokens, keys, NATS users)."""
    return sorted({v for k, v in environ.items() if k.endswith("_FILE") and v and os.path.exists(v)})


def builtins_for(settings, run_dir: Path) -> Builtins:
    box = settings.sandbox
    limits = SandboxLimits(
        cpu_s=box.cpu_s,
        wall_s=box.wall_s,
        memory_bytes=box.memory_mb << 20,
        processes=box.processes,
        output_bytes=box.output_bytes,
        concurrent=box.concurrent,
    )
    return Builtins(limits=limits, hide=[str(run_dir), *secret_paths()])


class EnvironmentProcess(ServiceProcess):
    name = "environment"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--grpc-port",
            type=int,
            default=None,
            help="EnvironmentService port (default: environment.grpc_port; 0 = any free port)",
        )

    async def prepare(self, ctx: ServiceContext) -> None:
        settings = settings_of(ctx.cfg)
        if settings.adapter:  # a library's environment (services/environment/adapters)
            self.served, stop = await adapter_environments(settings)
            ctx.on_stop(stop)
            log.info("%s: serving %s through the %s adapter", ctx.replica, settings.name, settings.adapter)
            return
        run_dir = Path(ctx.args.config).resolve().parent
        try:
            self.served = environments([settings.served], builtins_for(settings, run_dir))
        except SandboxUnavailable as err:
            raise ConfigError(f"environment.builtin={settings.builtin!r}: {err}") from None
        log.info("%s: serving %s", ctx.replica, settings.served)

    async def start(self, ctx: ServiceContext) -> None:
        settings = ctx.cfg.environment
        port = settings.grpc_port if ctx.args.grpc_port is None else ctx.args.grpc_port
        server, bound = await start_env_server(self.served, port=port, max_episodes=settings.max_episodes)
        ctx.on_stop(stop_env_server, server)
        if ctx.metrics is not None:  # what HPA/KEDA and the chaos tests read
            episodes = server.env_servicer.episodes
            ctx.metrics.gauge(
                "meshrl_env_open_episodes",
                lambda: len(episodes.open) + len(episodes.opening),
                "episodes open (reset, not closed) on this replica",
            )
            ctx.metrics.gauge(
                "meshrl_env_max_episodes",
                lambda: episodes.max_episodes,
                "open episodes this replica takes before RESOURCE_EXHAUSTED",
            )
        log.info("%s: EnvironmentService on port %d", ctx.replica, bound)
        await ctx.announce_grpc(bound)

    async def work(self, ctx: ServiceContext) -> None:
        """Serve until cancelled by a stop (the server answers on its own)."""
        await asyncio.Event().wait()
