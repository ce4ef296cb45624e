"""The reward service: a NATS worker (generated → scored/ready) plus a gRPC RewardService.

    python -m meshrl.services.reward --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id reward-0] [--grpc-port 0]

Start-up, in order, failing with a message that names what is wrong:
  1. load the RunConfig and build the components from `reward.components` (bad kinds and
     params are ConfigErrors);
  2. check every external component's address answers health within 5 s;
  3. warm the math-verify process pools;
  4. connect to NATS, serve RewardService (+ health, reflection) on --grpc-port (0 = a
     free port; the port is logged), put {"grpc": "127.0.0.1:PORT", ...} under the run KV
     key `services/reward/<replica>` (`meshrl.transport.bus.registry`; the learner's evaluation finds
     it there), then consume `generated`.
SIGTERM/SIGINT: stop taking messages; groups in hand are nak'ed (not published, so another
replica scores them at once), stop the server, close the bus and the pools. Exit 0 on a
clean stop (the KV entry is deleted then); 2 on a config, external-service or NATS start-up
error; a consumer that dies (e.g. NATS gone for good) raises, exit 1.

Metrics (telemetry.metrics): a Prometheus endpoint on telemetry.metrics_port starts before
NATS (prints `METRICS http://127.0.0.1:PORT/metrics`) and is announced under the run KV key
`metrics/reward/<replica>` (meshrl.ops.telemetry.service_metrics); deleted on a clean stop.

Simplification: reward.grpc_port is not in the config yet, hence --grpc-port.
"""
import argparse
import asyncio
import logging
import os
import signal
import sys

from meshrl.config import ConfigError, load_config
from meshrl.services.reward.components import build_components
from meshrl.services.reward.instruments import reward_instruments
from meshrl.services.reward.rules.verify_pool import shutdown_pools
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.startup import check_externals, warm_pools
from meshrl.ops.telemetry.service_metrics import announce_metrics, close_service_metrics, open_service_metrics
from meshrl.ops.telemetry.tracing import shutdown_tracing, start_tracing

log = logging.getLogger("meshrl.services.reward")
CONCURRENT_GROUPS = 4  # groups scored at once (external calls overlap; math batches queue on the pool)
ACK_WAIT_S = 60.0  # heartbeats (in_progress) keep longer scoring alive


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m meshrl.services.reward", description=__doc__.splitlines()[0])
    p.add_argument("--nats", required=True, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default=None, help="default: reward-<pid>")
    p.add_argument("--grpc-port", type=int, default=0, help="RewardService port (0 = pick a free one)")
    return p.parse_args(argv)


async def prepare(args: argparse.Namespace):
    """Config → checked, warmed scorer, and whether a reference follows us."""
    cfg = load_config(args.config)
    components = build_components(cfg.reward.components, args.run_id)
    scorer = GroupScorer(components)
    try:
        await check_externals(components)
        await warm_pools(components)
    except BaseException:
        await scorer.close()
        raise
    return cfg, scorer


async def serve(args: argparse.Namespace, stop: asyncio.Event) -> None:
    from meshrl.transport.rpc import stop_server
    from meshrl.services.reward.server import start_reward_server
    from meshrl.services.reward.worker import IN_STAGE, RewardWorker

    replica = args.replica_id or f"reward-{os.getpid()}"
    cfg, scorer = await prepare(args)
    start_tracing(cfg, "reward", replica, args.run_id)
    from meshrl.transport.bus import Bus  # after the checks: a bad config fails without needing NATS
    from meshrl.transport.bus.registry import announce_service

    metrics = None
    try:
        metrics = open_service_metrics(cfg, "reward", replica, args.run_id)
        bus = await Bus.connect(args.nats, args.run_id, name=replica)
    except BaseException:
        await close_service_metrics(None, metrics)
        await scorer.close()
        raise
    await announce_metrics(bus.state, metrics)
    server, port = await start_reward_server(scorer, args.grpc_port)
    worker = RewardWorker(bus, scorer, cfg.reference_enabled, replica, reward_instruments(metrics))
    log.info("%s: RewardService on port %d; components %s; %s → %s", replica, port,
             [c.name for c in scorer.components], IN_STAGE, worker.out_stage)
    try:
        await announce_service(bus.state, "reward", replica, f"127.0.0.1:{port}")
        await run_worker(bus, worker, stop)
    finally:
        await stop_server(server, grace=2)
        await withdraw(bus, replica)
        await close_service_metrics(bus.state, metrics)
        await bus.close()
        await scorer.close()
        shutdown_tracing()
    log.info("%s: stopped after %d groups", replica, worker.groups_done)


async def withdraw(bus, replica: str) -> None:
    """Remove our KV entry; NATS may already be gone (the entry is advisory)."""
    from meshrl.transport.bus.registry import withdraw_service

    try:
        await withdraw_service(bus.state, "reward", replica)
    except Exception as err:  # noqa: BLE001
        log.warning("could not remove %s's entry from the run KV: %r", replica, err)


async def run_worker(bus, worker, stop: asyncio.Event) -> None:
    from meshrl.services.reward.worker import DURABLE, IN_STAGE

    consumer = asyncio.create_task(bus.worker(
        IN_STAGE, DURABLE, worker.handle, batch=CONCURRENT_GROUPS, ack_wait=ACK_WAIT_S, auto_in_progress=True))
    stopped = asyncio.create_task(stop.wait())
    await asyncio.wait([consumer, stopped], return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if consumer.done():  # the consumer loop only ends by failing
        consumer.result()
        raise RuntimeError(f"the {IN_STAGE!r} consumer stopped on its own")
    consumer.cancel()
    await asyncio.gather(consumer, return_exceptions=True)


async def amain(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(args, stop)


def startup_errors() -> tuple[type[BaseException], ...]:
    from meshrl.transport.bus.errors import BusUnavailable

    return (ConfigError, ConnectionError, BusUnavailable)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    try:
        asyncio.run(amain(args))
    except startup_errors() as err:
        print(f"reward service: {err}", file=sys.stderr)
        return 2
    finally:
        shutdown_pools()
    return 0
