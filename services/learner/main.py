"""The learner service: the run's orchestrator and trainer.

    python -m meshrl.services.learner --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--resume RUN_DIR]

Start-up, in order: load the config; load and validate the dataset (the report goes to the
log and RUN_DIR/data_report.json before any training); load the model, optimizer (and
critic); connect to NATS and serve LearnerControlService (+ health) on learner.grpc_port;
then run the loop (`loop.py`) for `learner.steps` steps, writing RUN_DIR/metrics.jsonl,
a checkpoint every `learner.checkpoint_every` steps and at the end (RUN_DIR/checkpoints/step_N),
and save the final policy to RUN_DIR/final (a Hugging Face model dir).
`--resume` first restores the newest good checkpoint (see `checkpointing.py`).
SIGTERM / SIGINT (preemption): the current step is finished, or abandoned if it is still
gathering, a checkpoint is written and the process exits 0; a second signal stops at once.
Exit codes: 0 done or stopped cleanly, 2 bad config / data / model / checkpoint, 1 anything else.
Metrics (telemetry.metrics): each step's metrics.jsonl numbers are also gauges
`meshrl_learner_<key>` on a Prometheus endpoint (prints `METRICS http://127.0.0.1:PORT/metrics`,
run KV key `metrics/learner/<replica>`; meshrl.ops.telemetry.service_metrics).

Simplifications: one process (FSDP across torchrun ranks is exercised by the learner core's
tests, not yet by the service). Offline algorithms (DPO) run `offline.py` instead of the
online loop (checkpoints and resume too; no sampling, so no alerts or evaluation).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from meshrl.transport.bus import Bus
from meshrl.transport.bus import subjects as names
from meshrl.api.common.v1 import common_pb2
from meshrl.config import ConfigError, load_config
from meshrl.inputs.data.rows import DatasetError
from meshrl.api.learner.v1 import learner_pb2_grpc
from meshrl.inputs.models.load import ModelLoadError
from meshrl.transport.rpc import registration, start_server, stop_server
from meshrl.inputs.checkpoint import CheckpointError
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.services.learner import assemble, build
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.services.learner.ledger import Ledger
from meshrl.services.learner.metric_logger import with_prometheus
from meshrl.ops.telemetry.service_metrics import announce_metrics, close_service_metrics, open_service_metrics
from meshrl.ops.telemetry.tracing import shutdown_tracing, start_tracing

log = logging.getLogger("meshrl.learner")
USER_ERRORS = (ConfigError, DatasetError, ModelLoadError, CheckpointError, FileNotFoundError)


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m meshrl.services.learner", description=__doc__.splitlines()[0])
    p.add_argument("--nats", required=True, help="NATS url, e.g. nats://127.0.0.1:4222")
    p.add_argument("--run-id", required=True)
    p.add_argument("--config", required=True, help="the run's resolved config.yaml")
    p.add_argument("--replica-id", default="learner-0")
    p.add_argument("--resume", default=None, metavar="RUN_DIR_OR_CHECKPOINT",
                   help="continue from the newest good checkpoint of RUN_DIR (or from step_N)")
    return p.parse_args(argv)


async def follow_weights_acks(bus, run_id: str, ledger: Ledger):
    """Record every rollout replica's "loaded version N" in the group ledger."""
    async def on_ack(msg):
        ack = common_pb2.WeightsLoaded()
        ack.ParseFromString(msg.data)
        ledger.weights_loaded(ack)
        if not ack.ok:
            log.error("replica %s failed to load weights v%d: %s", ack.replica_id, ack.version, ack.error)
    return await bus.nc.subscribe(names.weights_loaded_subject(run_id), cb=on_ack)


async def serve(args: argparse.Namespace, preemption: "Preemption") -> None:
    cfg = load_config(args.config)
    start_tracing(cfg, "learner", args.replica_id, args.run_id)
    bus = await Bus.connect(args.nats, args.run_id, name=args.replica_id, timeout=cfg.nats.connect_timeout_s)
    state = LearnerState(run_id=args.run_id, total_steps=cfg.learner.steps)
    metrics = None
    try:
        metrics = open_service_metrics(cfg, "learner", args.replica_id, args.run_id)
        await bus.ensure_streams()
        await announce_metrics(bus.state, metrics)
        preemption.state = state
        assemble_loop = assemble.offline if cfg.algorithm.offline else assemble.online
        built = await assemble_loop(cfg, bus, args.run_id, state, resume=args.resume)
        built.loop.logger = with_prometheus(built.loop.logger, metrics)  # each step's numbers as gauges
        servicer = LearnerControl(state)
        server, port = await start_server(
            [registration(learner_pb2_grpc.add_LearnerControlServiceServicer_to_server, servicer,
                          "meshrl.learner.v1.LearnerControlService")], port=cfg.learner.grpc_port)
        acks = await follow_weights_acks(bus, args.run_id, built.ledger)
        log.info("READY grpc=127.0.0.1:%d", port)
        try:
            await built.loop.run()
            if state.stopping.is_set():
                log.warning("stopped before the last step (%s); resume with "
                            "`meshrl train --resume %s`", state.message, cfg.run.dir)
            else:
                final = await in_trainer_thread(build.save_pretrained, built.policy, built.tokenizer,
                                                built.dist, Path(cfg.run.dir) / "final")
                log.info("run done: final policy in %s", final)
        finally:
            built.close()
            await acks.unsubscribe()
            await stop_server(server, grace=1.0)
    finally:
        await close_service_metrics(bus.state, metrics)
        await bus.close()
        shutdown_tracing()


class Preemption:
    """SIGTERM / SIGINT: the first asks the loop to stop after (or instead of, if it is still
    gathering) the current step and to write a checkpoint, then exit 0, so interruptible
    machines lose at most one step. Before the loop exists, or on a second signal: cancel."""

    def __init__(self, task: asyncio.Task):
        self.task, self.state = task, None

    def __call__(self, signame: str) -> None:
        if self.state is None or self.state.stopping.is_set():
            log.warning("%s: stopping now", signame)
            self.task.cancel()
            return
        log.warning("%s: finishing the current step, then checkpoint and exit "
                    "(send it again to stop at once)", signame)
        self.state.request_stop(signame)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    args = parse_args(argv)
    loop = asyncio.new_event_loop()
    task = loop.create_task(serve(args, preemption := Preemption(None)))
    preemption.task = task
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, preemption, sig.name)
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
