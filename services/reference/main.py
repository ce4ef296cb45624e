"""The reference service: a NATS worker (scored → ready) plus a gRPC ReferenceService.

    python -m meshrl.services.reference --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id reference-0]

Start-up, in order, failing with a message that names what is wrong:
  1. load the RunConfig and the frozen reference model (`model.path`, eval, no grad);
  2. serve ReferenceService (+ health, reflection) on reference.grpc_port + the replica's
     number (the launcher resolves 0 to a free port; 0 here picks any free port, logged);
  3. start the Prometheus endpoint (telemetry.metrics on telemetry.metrics_port; prints
     `METRICS http://127.0.0.1:PORT/metrics`), connect to NATS, announce the URL under the
     run KV key `metrics/reference/<replica>` (meshrl.ops.telemetry.service_metrics), and
     consume `scored` with the durable `reference`.
SIGTERM/SIGINT: stop taking messages (the group in hand is acked only after its publish),
stop the server, withdraw the KV entries (metrics URL and `services/reference/<replica>`,
the gRPC address the learner's health watch checks), close the bus. Exit 0 on a clean stop, 2 on a
config, model or NATS error.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import signal
import sys

from meshrl.config import ConfigError, load_config
from meshrl.ops.telemetry.service_metrics import announce_metrics, close_service_metrics, open_service_metrics
from meshrl.ops.telemetry.tracing import shutdown_tracing, start_tracing

log = logging.getLogger("meshrl.services.reference")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m meshrl.services.reference",
                                description=__doc__.splitlines()[0])
    p.add_argument("--nats", required=True, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default=None, help="default: reference-<pid>")
    return p.parse_args(argv)


def grpc_port(base: int, replica_id: str) -> int:
    """base + the replica's trailing number (reference-2 → base + 2); 0 stays 0 (any port)."""
    if base == 0:
        return 0
    match = re.search(r"(\d+)$", replica_id)
    return base + (int(match.group(1)) if match else 0)


async def serve(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from meshrl.inputs.models.load import resolve_model_source

    replica = args.replica_id or f"reference-{os.getpid()}"
    cfg = load_config(args.config)
    start_tracing(cfg, "reference", replica, args.run_id)
    resolve_model_source(cfg.model.path, cfg.model.gguf_file)  # a wrong path fails before torch loads
    from meshrl.transport.rpc import stop_server
    from meshrl.services.reference.scorer import ReferenceScorer
    from meshrl.services.reference.instruments import reference_instruments
    from meshrl.services.reference.server import start_reference_server
    from meshrl.services.reference.worker import DURABLE, STAGE, ReferenceWorker

    scorer = await asyncio.to_thread(ReferenceScorer.from_config, cfg)
    from meshrl.transport.bus import Bus  # after the model: a bad config fails without needing NATS
    from meshrl.transport.bus.registry import announce_service, withdraw_service

    server, port = await start_reference_server(scorer, grpc_port(cfg.reference.grpc_port, replica))
    metrics = None
    try:
        metrics = open_service_metrics(cfg, "reference", replica, args.run_id)
        bus = await Bus.connect(args.nats, args.run_id, name=replica)
    except BaseException:
        await close_service_metrics(None, metrics)
        await server.stop(grace=0)
        raise
    await announce_metrics(bus.state, metrics)
    worker = ReferenceWorker(bus, scorer, replica, reference_instruments(metrics))
    log.info("%s: ReferenceService on port %d; model %s, T=%g, micro-batch %d; %s → ready",
             replica, port, cfg.model.path, scorer.temperature, scorer.micro_batch_size, STAGE)
    try:
        await announce_service(bus.state, "reference", replica, f"127.0.0.1:{port}")
        await run_until_stopped(bus.worker(STAGE, DURABLE, worker.handle, auto_in_progress=True), stop)
    finally:
        await stop_server(server, grace=2)
        await withdraw_service(bus.state, "reference", replica)
        await close_service_metrics(bus.state, metrics)
        await bus.close()
        shutdown_tracing()
    log.info("%s: stopped after %d groups", replica, worker.groups_done)


async def run_until_stopped(consume, stop: asyncio.Event) -> None:
    """Run the consumer until `stop` is set; a consumer that fails raises here."""
    consumer = asyncio.ensure_future(consume)
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait([consumer, stopped], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if consumer.done():
        consumer.result()  # re-raise why it ended
        return
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)


async def amain(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(args, stop)


def user_errors() -> tuple[type[BaseException], ...]:
    from meshrl.transport.bus.errors import BusUnavailable
    from meshrl.inputs.models.load import ModelLoadError

    return (ConfigError, ModelLoadError, BusUnavailable, ConnectionError, OSError)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    try:
        asyncio.run(amain(args))
    except user_errors() as err:
        print(f"reference service: {err}", file=sys.stderr)
        return 2
    return 0
