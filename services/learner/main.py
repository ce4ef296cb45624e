"""The learner service: the run's orchestrator and trainer.

    python -m meshrl.services.learner --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml

Start-up, in order: load the config; load and validate the dataset (the report goes to the
log and RUN_DIR/data_report.json before any training); load the model, optimizer (and
critic); connect to NATS and serve LearnerControlService (+ health) on learner.grpc_port;
then run the loop (`loop.py`) for `learner.steps` steps, writing RUN_DIR/metrics.jsonl,
and save the final policy to RUN_DIR/final (a Hugging Face model dir).
Exit codes: 0 done, 2 bad config / data / model, 1 anything else.
Metrics (telemetry.metrics): each step's metrics.jsonl numbers are also gauges
`meshrl_learner_<key>` on a Prometheus endpoint (prints `METRICS http://127.0.0.1:PORT/metrics`,
run KV key `metrics/learner/<replica>`; meshrl.telemetry.service_metrics).

Simplifications: one process (FSDP across torchrun ranks is exercised by the learner core's
tests, not yet by the service); checkpoints beyond the final model come with run-ops.
Offline algorithms (DPO) run `offline.py` instead of the online loop.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from meshrl.bus import Bus
from meshrl.bus import subjects as names
from meshrl.common.v1 import common_pb2
from meshrl.config import ConfigError, RunConfig, load_config
from meshrl.data.rows import DatasetError
from meshrl.learner.v1 import learner_pb2_grpc
from meshrl.models.load import ModelLoadError
from meshrl.rpc import registration, start_server, stop_server
from meshrl.services.learner import build
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.services.learner.feeder import FeederState, PromptFeeder
from meshrl.services.learner.gather import Gatherer
from meshrl.services.learner.ledger import Ledger
from meshrl.services.learner.loop import Learner
from meshrl.services.learner.metric_logger import JsonlLogger, with_prometheus
from meshrl.services.learner.offline import OfflineLearner
from meshrl.services.learner.reference_client import ReferenceClient
from meshrl.services.learner.train.dpo import DPOStep
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.telemetry.service_metrics import announce_metrics, close_service_metrics, open_service_metrics
from meshrl.telemetry.tracing import shutdown_tracing, start_tracing
from meshrl.services.learner.weights import ObjectStoreTransport, ShmTransport, WeightsPublisher

log = logging.getLogger("meshrl.learner")
USER_ERRORS = (ConfigError, DatasetError, ModelLoadError, FileNotFoundError)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m meshrl.services.learner", description=__doc__.splitlines()[0])
    p.add_argument("--nats", required=True, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default="learner-0")
    return p.parse_args(argv)


def make_transport(cfg: RunConfig, bus, run_id: str):
    if cfg.learner.weights_transport == "objectstore":
        return ObjectStoreTransport(bus)
    return ShmTransport(run_id)


@dataclass
class Built:
    loop: object  # Learner (online) or OfflineLearner (DPO): `await loop.run()`
    policy: object
    tokenizer: object
    dist: DistContext
    feeder_state: object
    ledger: Ledger


def pad_id_of(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def logger_for(cfg: RunConfig) -> JsonlLogger:
    return JsonlLogger(Path(cfg.run.dir) / "metrics.jsonl")


async def online(cfg: RunConfig, bus, run_id: str, state: LearnerState) -> Built:
    dist = DistContext()
    tokenizer = build.build_tokenizer(cfg)
    dataset = build.build_dataset(cfg, tokenizer)
    policy, critic = build.build_policy_model(cfg, dist)
    run_dir = Path(cfg.run.dir)
    ledger = Ledger(run_dir / "groups.jsonl")
    feeder = PromptFeeder(bus, dataset, cfg, run_id, ledger)
    tied = bool(getattr(policy.model.config, "tie_word_embeddings", False))
    loop = Learner(
        cfg=cfg, feeder=feeder, gatherer=Gatherer(bus, feeder, cfg, ledger=ledger),
        train_step=build.build_train_step(cfg, policy, critic, dist),
        publisher=WeightsPublisher(bus, make_transport(cfg, bus, run_id), run_id, tied_embeddings=tied),
        export_weights=build.rollout_weights(policy, dist),
        save_checkpoint=lambda step, tag: build.save_pretrained(policy, tokenizer, dist, run_dir / "checkpoints" / f"step_{step}"),
        logger=logger_for(cfg), state=state, pad_id=pad_id_of(tokenizer), need_ref=cfg.reference_enabled)
    return Built(loop, policy, tokenizer, dist, feeder.state, ledger)


async def offline(cfg: RunConfig, bus, run_id: str, state: LearnerState) -> Built:
    dist = DistContext()
    tokenizer = build.build_tokenizer(cfg)
    pairs = build.build_pairs(cfg, tokenizer)
    policy, _ = build.build_policy_model(cfg, dist)
    loop = OfflineLearner(
        cfg=cfg, pairs=pairs, dpo_step=DPOStep(policy, cfg.algorithm, cfg.trainer, dist=dist),
        reference=ReferenceClient(cfg.reference.resolved_address, timeout_s=cfg.reference.timeout_s),
        logger=logger_for(cfg), state=state, pad_id=pad_id_of(tokenizer))
    return Built(loop, policy, tokenizer, dist, FeederState(), Ledger(None))


async def follow_weights_acks(bus, run_id: str, ledger: Ledger):
    """Record every rollout replica's "loaded version N" in the group ledger."""
    async def on_ack(msg):
        ack = common_pb2.WeightsLoaded()
        ack.ParseFromString(msg.data)
        ledger.weights_loaded(ack)
        if not ack.ok:
            log.error("replica %s failed to load weights v%d: %s", ack.replica_id, ack.version, ack.error)
    return await bus.nc.subscribe(names.weights_loaded_subject(run_id), cb=on_ack)


async def serve(args: argparse.Namespace) -> None:
    cfg = load_config(args.config)
    start_tracing(cfg, "learner", args.replica_id, args.run_id)
    bus = await Bus.connect(args.nats, args.run_id, name=args.replica_id, timeout=cfg.nats.connect_timeout_s)
    state = LearnerState(run_id=args.run_id, total_steps=cfg.learner.steps)
    metrics = None
    try:
        metrics = open_service_metrics(cfg, "learner", args.replica_id, args.run_id)
        await bus.ensure_streams()
        await announce_metrics(bus.state, metrics)
        built = await (offline if cfg.algorithm.offline else online)(cfg, bus, args.run_id, state)
        built.loop.logger = with_prometheus(built.loop.logger, metrics)  # each step's numbers as gauges
        servicer = LearnerControl(state, built.feeder_state)
        server, port = await start_server(
            [registration(learner_pb2_grpc.add_LearnerControlServiceServicer_to_server, servicer,
                          "meshrl.learner.v1.LearnerControlService")], port=cfg.learner.grpc_port)
        acks = await follow_weights_acks(bus, args.run_id, built.ledger)
        log.info("READY grpc=127.0.0.1:%d", port)
        try:
            await built.loop.run()
            final = build.save_pretrained(built.policy, built.tokenizer, built.dist, Path(cfg.run.dir) / "final")
            log.info("run done: final policy in %s", final)
        finally:
            built.loop.logger.close()
            built.ledger.close()
            await acks.unsubscribe()
            await stop_server(server, grace=1.0)
    finally:
        await close_service_metrics(bus.state, metrics)
        await bus.close()
        shutdown_tracing()


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    loop = asyncio.new_event_loop()
    task = loop.create_task(serve(args))
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        loop.run_until_complete(task)
        return 0
    except asyncio.CancelledError:
        log.warning("stopped by signal")
        return 0
    except USER_ERRORS as err:
        print(f"learner: {err}", file=sys.stderr)
        return 2
    finally:
        loop.close()
