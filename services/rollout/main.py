"""The rollout service: a vLLM engine behind a NATS worker (prompts → generated) and gRPC.

    python -m meshrl.services.rollout --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id rollout-0] [--grpc-port 0]

Start-up, in order:
  1. load the RunConfig (`meshrl.config.load_config`; a bad file exits 2 with the reason);
  2. connect to NATS (fails fast with exit 2 if unreachable);
  3. build the engine on `model.path` (≈30 s on CPU; vLLM spawns its own processes), read
     the run's weights notice from the KV bucket and load that version first (a restarted
     replica never serves older weights than the run's);
  4. serve RolloutService (+ health, reflection) on --grpc-port (default
     rollout.grpc_port; 0 = a free port), print `READY grpc=127.0.0.1:PORT replica=ID
     version=N` on stdout and put {"grpc": "127.0.0.1:PORT", ...} under the run KV key
     `services/rollout/<replica>`;
  5. follow later weights notices, and once the newest version is held, consume `prompts`
     with the durable `rollout` (shared by all replicas).
Metrics (telemetry.metrics): a Prometheus endpoint on telemetry.metrics_port starts before
vLLM (a taken port fails fast), prints `METRICS http://127.0.0.1:PORT/metrics` and is
announced under the run KV key `metrics/rollout/<replica>` (meshrl.ops.telemetry.service_metrics)
before READY; counters in instruments.py.
SIGTERM/SIGINT: stop consuming (in-flight tasks are nak'ed so another replica takes them),
stop the watch, stop the server, shut vLLM down, close the bus; exit 0. The KV entry is
deleted on a clean stop.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from meshrl.config import ConfigError, load_config
from meshrl.ops.telemetry.service_metrics import announce_metrics, close_service_metrics, open_service_metrics
from meshrl.ops.telemetry.tracing import shutdown_tracing, start_tracing

log = logging.getLogger("meshrl.services.rollout")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m meshrl.services.rollout", description=__doc__.splitlines()[0])
    p.add_argument("--nats", required=True, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default=None, help="default: rollout-<pid>")
    p.add_argument("--grpc-port", type=int, default=None, help="default: rollout.grpc_port (0 = any free port)")
    p.add_argument("--concurrency", type=int, default=16, help="groups generated at once from the queue")
    return p.parse_args(argv)


def registry_key(replica: str) -> str:
    from meshrl.transport.bus.registry import service_key

    return service_key("rollout", replica)


async def start_parts(args: argparse.Namespace, cfg, replica: str):
    """Engine, bus, weights follower (current version loaded), gRPC server: in start order."""
    from meshrl.transport.bus import Bus
    from meshrl.transport.bus import subjects as names
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine
    from meshrl.services.rollout.follower import WeightsFollower
    from meshrl.services.rollout.server import start_rollout_server
    from meshrl.services.rollout.weights import WeightsUpdater

    bus = await Bus.connect(args.nats, args.run_id, name=replica)  # fail fast, before vLLM starts
    engine = None
    try:
        engine = await RolloutEngine.start(EngineConfig.from_run_config(cfg, replica_id=replica))
        subject = names.weights_loaded_subject(args.run_id)
        updater = WeightsUpdater(engine, run_id=args.run_id, replica_id=replica,
                                 fetch_object=bus.weights.fetch_verified,
                                 publish_loaded=lambda report: bus.publish_event(subject, report))
        follower = WeightsFollower(bus.state, updater)
        await follower.start()
        port = cfg.rollout.grpc_port if args.grpc_port is None else args.grpc_port
        server, bound = await start_rollout_server(engine, port, ready=follower.ready.is_set)
    except BaseException:  # never leave vLLM's processes or the connection behind
        if engine is not None:
            engine.shutdown()
        await bus.close()
        raise
    return engine, bus, follower, server, bound


async def announce(bus, replica: str, port: int, version: int) -> None:
    from meshrl.transport.bus.registry import announce_service

    address = f"127.0.0.1:{port}"
    await announce_service(bus.state, "rollout", replica, address)
    print(f"READY grpc={address} replica={replica} version={version}", flush=True)


async def consume_when_ready(follower, worker, concurrency: int) -> None:
    await follower.ready.wait()
    log.info("holding weights v%d: consuming prompts", follower.held)
    await worker.run(concurrency=concurrency)


async def serve(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from meshrl.services.rollout.instruments import rollout_instruments
    from meshrl.services.rollout.worker import RolloutWorker

    cfg = load_config(args.config)
    replica = args.replica_id or f"rollout-{os.getpid()}"
    start_tracing(cfg, "rollout", replica, args.run_id)
    metrics = open_service_metrics(cfg, "rollout", replica, args.run_id)  # before vLLM: fails fast
    try:
        engine, bus, follower, server, port = await start_parts(args, cfg, replica)
    except BaseException:
        await close_service_metrics(None, metrics)
        raise
    worker = RolloutWorker(bus, engine, on_group=rollout_instruments(metrics, engine))
    tasks = [asyncio.create_task(follower.run()),
             asyncio.create_task(consume_when_ready(follower, worker, args.concurrency))]
    try:
        await announce_metrics(bus.state, metrics)
        await announce(bus, replica, port, engine.version)
        await wait_for_stop_or_failure(stop, tasks)
    finally:
        await close_service_metrics(bus.state, metrics)
        await shut_down(tasks, server, bus, engine, replica)


async def wait_for_stop_or_failure(stop: asyncio.Event, tasks: list[asyncio.Task]) -> None:
    """Return on stop; re-raise if a background task dies first (the process must not idle)."""
    stopped = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait([stopped, *tasks], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    for task in done - {stopped}:
        task.result()


async def shut_down(tasks, server, bus, engine, replica: str) -> None:
    from meshrl.transport.rpc import stop_server

    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await stop_server(server, grace=2)
    try:
        await bus.state.delete(registry_key(replica))
    except Exception as err:  # noqa: BLE001 - NATS may already be gone; the entry is advisory
        log.warning("could not remove %s from the run KV: %r", registry_key(replica), err)
    await bus.close()
    engine.shutdown()
    shutdown_tracing()
    log.info("%s: stopped after %d groups", replica, engine.groups_generated)


async def amain(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(args, stop)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from meshrl.transport.bus import BusError

    args = parse_args(argv)
    try:
        asyncio.run(amain(args))
    except (ConfigError, BusError, FileNotFoundError, ValueError) as err:
        print(f"rollout service: {err}", file=sys.stderr)
        return 2
    return 0
