"""The rollout service: a vLLM engine behind a NATS worker (prompts → generated) and gRPC.

    python -m meshrl.services.rollout --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id rollout-0] [--grpc-port 0] [--concurrency 16]

Run by the shared service runner (meshrl.service): flags, config, tracing, the metrics
endpoint, NATS, signals, clean-up and exit codes are the same for every service. Start-up:
  1. load the RunConfig; start the Prometheus endpoint on telemetry.metrics_port before
     vLLM (a taken port fails fast; prints `METRICS http://127.0.0.1:PORT/metrics`);
  2. connect to NATS (fails fast, before vLLM starts) and announce the metrics URL under the
     run KV key `metrics.rollout.<replica>`;
  3. build the engine on `model.path` (≈30 s on CPU; vLLM spawns its own processes), read
     the run's weights notice from the KV bucket and load that version first (a restarted
     replica never serves older weights than the run's);
  4. serve RolloutService (+ health, reflection) on --grpc-port (default
     rollout.grpc_port; 0 = a free port), put {"grpc": "127.0.0.1:PORT", ...} under the run
     KV key `services.rollout.<replica>` and print `READY grpc=127.0.0.1:PORT replica=ID
     version=N` on stdout;
  5. follow later weights notices, and once the newest version is held, consume `prompts`
     with the durable `rollout` (shared by all replicas). Counters in instruments.py.
     With an `environment` section, tasks that name it are played as multi-turn episodes
     against it (agent/: the client is built at start-up, a built-in's replicas are read
     from the run KV and kept fresh).
The engine's death (its engine-core process gone): NOT_SERVING on grpc.health, exit 1, so
the supervisor or the container runtime restarts the replica (engine_watch.py).
SIGTERM/SIGINT: stop consuming (in-flight tasks are nak'ed so another replica takes them),
stop the watch, withdraw the KV entries, stop the server, shut vLLM down, close the bus;
exit 0. Exit 2 on a start-up error (config, NATS, model), with `rollout service: <error>`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os

from meshrl.security.run_key import verifier_from_env
from meshrl.service import ServiceContext, ServiceProcess, run_service
from meshrl.services.rollout.agent.build import agent_rollout
from meshrl.services.rollout.engine_watch import watch_engine
from meshrl.services.rollout.instruments import rollout_instruments
from meshrl.services.rollout.server import start_rollout_server
from meshrl.services.rollout.worker import RolloutWorker
from meshrl.transport.bus import subjects as names
from meshrl.transport.rpc import stop_server
from meshrl.transport.weights.follow import WeightsFollower

log = logging.getLogger("meshrl.services.rollout")


class RolloutProcess(ServiceProcess):
    name = "rollout"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--grpc-port", type=int, default=None, help="default: rollout.grpc_port (0 = any free port)"
        )
        parser.add_argument("--concurrency", type=int, default=16, help="groups generated at once from the queue")

    async def start(self, ctx: ServiceContext) -> None:
        """Engine, weights follower (current version loaded), gRPC server, KV entry, READY."""
        from meshrl.services.rollout.engine import (
            EngineConfig,
            RolloutEngine,
        )  # lazy: vLLM and torch (seconds): the metrics port and NATS fail fast first

        self.engine = await RolloutEngine.start(EngineConfig.from_run_config(ctx.cfg, replica_id=ctx.replica))
        ctx.on_stop(self.shut_engine_down, ctx.replica)
        self.agent = await agent_rollout(ctx.cfg, self.engine, state=ctx.bus.state, metrics=ctx.metrics)
        if self.agent is not None:
            ctx.on_stop(self.agent.aclose)
        self.follower = await self.follow_weights(ctx)
        port = ctx.cfg.rollout.grpc_port if ctx.args.grpc_port is None else ctx.args.grpc_port
        server, bound = await start_rollout_server(
            self.engine, port, ready=self.follower.ready.is_set, agent=self.agent
        )
        self.server = server
        ctx.on_stop(stop_server, server, 2)
        address = await ctx.announce_grpc(
            bound,
            workers=ctx.cfg.rollout.tensor_parallel_size,  # placement for `meshrl status`
            cores=os.environ.get("VLLM_CPU_OMP_THREADS_BIND", ""),
        )
        print(f"READY grpc={address} replica={ctx.replica} version={self.engine.version}", flush=True)

    async def follow_weights(self, ctx: ServiceContext):
        """A follower that has loaded the run's current weights (if any) into the engine."""
        from meshrl.transport.weights.update import (
            WeightsUpdater,
        )  # lazy: torch (seconds): the metrics port and NATS fail fast first

        bus, subject = ctx.bus, names.weights_loaded_subject(ctx.run_id)
        updater = WeightsUpdater(
            self.engine,
            run_id=ctx.run_id,
            replica_id=ctx.replica,
            fetch_object=bus.weights.fetch_verified,
            publish_loaded=lambda report: bus.publish_event(subject, report),
            verifier=verifier_from_env(),
        )
        ctx.on_stop(updater.close)  # its LoRA adapter directories, if any
        follower = WeightsFollower(bus.state, updater)
        await follower.start()
        return follower

    async def work(self, ctx: ServiceContext) -> None:
        """Follow weights notices and consume prompts while the engine lives (engine_watch.py:
        a dead engine is NOT_SERVING and ends the service, exit 1); whichever ends first ends it."""
        worker = RolloutWorker(
            ctx.bus, self.engine, on_group=rollout_instruments(ctx.metrics, self.engine), agent=self.agent
        )
        background = [self.agent.background()] if self.agent is not None else []
        consume = consume_when_ready(self.follower, worker, ctx.args.concurrency, ack_wait=ctx.cfg.rollout.ack_wait_s)
        await first_to_end(watch_engine(self.engine, self.server), self.follower.run(), *background, consume)

    def shut_engine_down(self, replica: str) -> None:
        self.engine.shutdown()
        log.info("%s: stopped after %d groups", replica, self.engine.groups_generated)


async def consume_when_ready(follower, worker, concurrency: int, ack_wait: float) -> None:
    await follower.ready.wait()
    log.info("holding weights v%d: consuming prompts", follower.held)
    await worker.run(concurrency=concurrency, ack_wait=ack_wait)


async def first_to_end(*coroutines) -> None:
    """Run them together until one ends; cancel the rest; re-raise if it failed."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def main(argv: list[str] | None = None) -> int:
    return run_service(RolloutProcess(), argv, description=__doc__.splitlines()[0])
