"""The reward-model service as a mesh service: what `meshrl train` and `meshrl serve` start.

    python -m meshrl.services.reward_model --nats URL --run-id RUN --config RUN_DIR/config.yaml \
        [--replica-id reward_model-0] [--grpc-port PORT]

Run by the shared service runner (meshrl.service), like the other services:
  1. load the RunConfig; its `reward_model` section (meshrl/config/reward_model.py) says
     which model, how it batches and normalises; none is a ConfigError (exit 2);
  2. load the model (model.py; a missing dir or a head without num_labels: 1 exits 2);
  3. connect to NATS, serve RewardService (+ health, reflection; the reward SDK) on
     --grpc-port, else reward_model.grpc_port (every replica binds the same port: gRPC sets
     SO_REUSEPORT, so the kernel spreads the reward replicas' connections over them), and put
     its address under the run KV key `services.reward_model.<replica>`;
  4. serve until SIGTERM/SIGINT: NOT_SERVING first (callers drain away), then stop.
The reward service calls it as its `kind: reward_model` component.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from meshrl.config import ConfigError
from meshrl.reward_sdk import start as start_reward_server
from meshrl.service import ServiceContext, ServiceProcess
from meshrl.services.reward_model.batcher import reward_fn
from meshrl.services.reward_model.normalize import RewardNormalizer
from meshrl.transport.rpc import stop_server

log = logging.getLogger("meshrl.services.reward_model")


def settings_of(cfg):
    """The run's reward_model section; a ConfigError when the config has none."""
    if cfg.reward_model is None:
        raise ConfigError(
            "the run config has no reward_model section: the reward-model service needs "
            "`reward_model: {path: DIR}` (and a reward component with kind: reward_model)"
        )
    return cfg.reward_model


def load_model(settings):
    """The model and its normaliser; a bad head or option becomes a ConfigError (exit 2)."""
    from meshrl.services.reward_model.model import (
        RewardModel,
    )  # lazy: torch/transformers (seconds): config errors fail fast first

    try:
        normalizer = RewardNormalizer(settings.normalize, settings.clip)
        return RewardModel(settings.path, device=settings.device, max_length=settings.max_length), normalizer
    except ValueError as err:
        raise ConfigError(f"reward_model.path={settings.path!r}: {err}") from err


class RewardModelProcess(ServiceProcess):
    name = "reward_model"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--grpc-port",
            type=int,
            default=None,
            help="RewardService port (default: reward_model.grpc_port; 0 = any free port)",
        )

    async def prepare(self, ctx: ServiceContext) -> None:
        settings = settings_of(ctx.cfg)
        model, normalizer = await asyncio.to_thread(load_model, settings)
        self.fn = reward_fn(model, normalizer, max_batch=settings.batch_size)
        ctx.on_stop(self.fn.batcher.close)
        log.info(
            "%s: model %s on %s (batch %d, normalize %s, clip %s)",
            ctx.replica,
            settings.path,
            model.device,
            settings.batch_size,
            settings.normalize,
            settings.clip,
        )

    async def start(self, ctx: ServiceContext) -> None:
        port = ctx.cfg.reward_model.grpc_port if ctx.args.grpc_port is None else ctx.args.grpc_port
        server, bound = await start_reward_server(self.fn, port=port)
        ctx.on_stop(server.reward_servicer.close)
        ctx.on_stop(stop_server, server, 2)
        log.info("%s: RewardService on port %d", ctx.replica, bound)
        await ctx.announce_grpc(bound)

    async def work(self, ctx: ServiceContext) -> None:
        """Serve until cancelled by a stop (the server answers on its own)."""
        await asyncio.Event().wait()
