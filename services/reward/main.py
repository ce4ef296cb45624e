"""The reward service: a NATS worker (generated → scored/ready) plus a gRPC RewardService.

    python -m meshrl.services.reward --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id reward-0] [--grpc-port 0]

Run by the shared service runner (meshrl.service): flags, config, tracing, the metrics
endpoint, NATS, signals, clean-up and exit codes are the same for every service.
Start-up, in order, failing with a message that names what is wrong:
  1. load the RunConfig; start the Prometheus endpoint (telemetry.metrics on
     telemetry.metrics_port; prints `METRICS http://127.0.0.1:PORT/metrics`);
  2. build the components from `reward.components` (bad kinds and params are ConfigErrors);
  3. check every external component's address answers health within 5 s (a `kind:
     reward_model` one is called as external at the reward-model service's address, and
     waited for up to reward_model.start_timeout_s: its model may still be loading);
  4. warm the math-verify process pools;
  5. connect to NATS (announcing the metrics URL under the run KV key
     `metrics.reward.<replica>`), serve RewardService (+ health, reflection) on --grpc-port
     (0 = a free port; the port is logged), put {"grpc": "127.0.0.1:PORT", ...} under the
     run KV key `services.reward.<replica>` (`meshrl.transport.bus.registry`; the learner's
     evaluation finds it there), then consume `generated`.
Steps 2-4 need no NATS: a bad config fails without it.
SIGTERM/SIGINT: stop taking messages; groups in hand are nak'ed (not published, so another
replica scores them at once), withdraw the KV entries, stop the server, close the bus and
the pools. Exit 0 on a clean stop; 2 on a config, external-service or NATS start-up error
(`reward service: <error>` on stderr), and also when a component with `on_failure: stop`
failed (failure_policy.py); a consumer that dies (e.g. NATS gone for good) raises, exit 1.

Simplification: reward.grpc_port is not in the config yet, hence --grpc-port.
"""

from __future__ import annotations

import argparse
import asyncio
import logging

from meshrl.config.reward_model import called_components, start_waits
from meshrl.service import ServiceContext, ServiceProcess, run_service
from meshrl.services.reward.components import build_components
from meshrl.services.reward.instruments import reward_instruments
from meshrl.services.reward.rules.reasoning_gym import shutdown_scorers
from meshrl.services.reward.rules.verify_pool import shutdown_pools
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.server import start_reward_server
from meshrl.services.reward.startup import check_externals, instrument_externals, warm_pools
from meshrl.services.reward.worker import DURABLE, IN_STAGE, RewardWorker
from meshrl.transport.rpc import stop_server

log = logging.getLogger("meshrl.services.reward")
CONCURRENT_GROUPS = 4  # groups scored at once (external calls overlap; math batches queue on the pool)


class RewardProcess(ServiceProcess):
    name = "reward"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--grpc-port", type=int, default=0, help="RewardService port (0 = pick a free one)")

    async def prepare(self, ctx: ServiceContext) -> None:
        """Components from the config → a checked, warmed scorer."""
        ctx.on_stop(shutdown_pools)  # first: the pools may start before a later check fails
        ctx.on_stop(shutdown_scorers)
        components = build_components(called_components(ctx.cfg), ctx.run_id)
        self.scorer = GroupScorer(components, {c.name: c.on_failure for c in ctx.cfg.reward.components})
        ctx.on_stop(self.scorer.close)
        instrument_externals(components, ctx.metrics)
        await check_externals(components, waits=start_waits(ctx.cfg))
        await warm_pools(components)

    async def start(self, ctx: ServiceContext) -> None:
        server, port = await start_reward_server(self.scorer, ctx.args.grpc_port)
        ctx.on_stop(stop_server, server, 2)
        self.worker = RewardWorker(
            ctx.bus, self.scorer, ctx.cfg.reference_enabled, ctx.replica, reward_instruments(ctx.metrics)
        )
        log.info(
            "%s: RewardService on port %d; components %s; %s → %s",
            ctx.replica,
            port,
            [c.name for c in self.scorer.components],
            IN_STAGE,
            self.worker.out_stage,
        )
        await ctx.announce_grpc(port)

    async def work(self, ctx: ServiceContext) -> None:
        """Consume `generated` until cancelled; the consumer loop only ends by failing."""
        consumer = asyncio.create_task(
            ctx.bus.worker(
                IN_STAGE,
                DURABLE,
                self.worker.handle,
                batch=CONCURRENT_GROUPS,
                ack_wait=ctx.cfg.reward.ack_wait_s,  # heartbeats (in_progress) keep longer scoring alive
                auto_in_progress=True,
            )
        )
        stop = asyncio.create_task(self.worker.stop_requested.wait())
        try:
            await asyncio.wait([consumer, stop], return_when=asyncio.FIRST_COMPLETED)
            if stop.done():  # on_failure: stop (failure_policy.py): exit 2, final for the launcher
                raise self.worker.stop_run
            consumer.result()
            raise RuntimeError(f"the {IN_STAGE!r} consumer stopped on its own")
        finally:
            for task in (consumer, stop):
                task.cancel()
            await asyncio.gather(consumer, stop, return_exceptions=True)
            log.info("%s: stopped after %d groups", ctx.replica, self.worker.groups_done)


def main(argv: list[str] | None = None) -> int:
    return run_service(RewardProcess(), argv, description=__doc__.splitlines()[0])
