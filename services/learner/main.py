"""The learner service: the run's orchestrator and trainer.

    python -m meshrl.services.learner --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id learner-0] [--resume RUN_DIR]

Run by the shared service runner (meshrl.service): flags, config, tracing, the metrics
endpoint, NATS, signals, clean-up and exit codes are the same for every service.
Start-up, in order: load the config; start the Prometheus endpoint; check that the checkpoint
key can sign (readable by this user, private: exit 2 naming the file otherwise); connect to NATS; import
the heavy half (torch, transformers, peft, FSDP, DCP) once, in `start`, and
create the run's streams; load and validate the dataset (the report goes to the log and
RUN_DIR/data_report.json before any training); load the model, optimizer (and critic);
serve LearnerControlService (+ health) on learner.grpc_port; then run the loop (`loop.py`)
for `learner.steps` steps, writing RUN_DIR/metrics.jsonl, a checkpoint every
`learner.checkpoint_every` steps and at the end (RUN_DIR/checkpoints/step_N), and save the
final policy to RUN_DIR/final (a Hugging Face model dir).
`--resume` first restores the newest good checkpoint (see `checkpointing.py`).
SIGTERM / SIGINT (preemption): while the loop runs, the current step is finished, or
abandoned if it is still gathering, a checkpoint is written and the process exits 0; a
second signal, or one during start-up, stops at once (exit 0).
Exit codes: 0 done or stopped, 2 bad config / data / model / checkpoint / NATS at start-up
(`learner service: <error>` on stderr), 1 anything else.
Metrics (telemetry.metrics): each step's metrics.jsonl numbers are also gauges
`meshrl_train_<key>` on a Prometheus endpoint (prints `METRICS http://127.0.0.1:PORT/metrics`,
run KV key `metrics.learner.<replica>`; meshrl.telemetry.service_metrics).

On N ranks (`learner.ranks`; the launcher runs `torchrun --standalone --nproc_per_node N -m
meshrl.services.learner ...`): rank 0 is the service above; ranks > 0 build their shard of
the model and follow rank 0's commands (`ranks.py`).

Simplifications: offline algorithms (DPO) run `offline.py` instead of the online loop
(checkpoints and resume too; no sampling, so no alerts or evaluation), on one rank.
"""

from __future__ import annotations

import argparse
import logging
import os

from meshrl.addresses import bind_host
from meshrl.api.common.v1 import common_pb2
from meshrl.api.learner.v1 import learner_pb2_grpc
from meshrl.config.load import dump_config
from meshrl.inputs.checkpoint.key import check_signing_key
from meshrl.run.audit import control_auditor
from meshrl.run_layout import RunDir
from meshrl.service import ServiceContext, ServiceProcess, run_service
from meshrl.service.args import parse_service_args
from meshrl.service.malloc import keep_freed_memory
from meshrl.service.runner import LOG_FORMAT
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.services.learner.heartbeat import start_heartbeat, stop_heartbeat
from meshrl.services.learner.ledger import Ledger
from meshrl.services.learner.metric_logger import with_prometheus
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.subjects import run_consumers
from meshrl.transport.rpc import registration, start_server, stop_server

log = logging.getLogger("meshrl.learner")


def keep_config_with_the_run(cfg) -> None:
    """RUN_DIR/config.yaml when no launcher wrote it (compose, Kubernetes: the config lives with
    the containers), so the run dir says what was asked: `meshrl status`, the gateway, a resume."""
    run = RunDir(cfg.run.dir)
    if not run.config.exists():
        run.path.mkdir(parents=True, exist_ok=True)
        run.config.write_text(dump_config(cfg))


class LearnerProcess(ServiceProcess):
    name = "learner"
    default_replica = "learner-0"
    creates_the_run = True  # ensure_streams() in start: the other services wait for it
    state: LearnerState | None = None  # set once the loop is built: signals then stop gracefully

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--resume",
            default=None,
            metavar="RUN_DIR_OR_CHECKPOINT",
            help="continue from the newest good checkpoint of RUN_DIR (or from step_N)",
        )

    async def prepare(self, ctx: ServiceContext) -> None:
        """The checkpoint key can sign (readable, private) before NATS, the model or a step:
        a key the container's user cannot read would otherwise fail the first save, after
        the training it was to keep."""
        check_signing_key()

    async def start(self, ctx: ServiceContext) -> None:
        """Streams, data, model (resumed if asked), the control server, the weights-ack ledger."""
        from meshrl.services.learner import (
            assemble,
        )  # lazy: the heavy half (torch, transformers, peft, FSDP, DCP: seconds), once, after the config and NATS

        cfg = ctx.cfg
        keep_config_with_the_run(cfg)
        ctx.on_stop(stop_heartbeat, start_heartbeat(RunDir(cfg.run.dir)))  # alive between metrics rows
        await ctx.bus.ensure_streams(run_consumers(cfg.ack_waits))
        state = LearnerState(run_id=ctx.run_id, total_steps=cfg.learner.steps)
        assemble_loop = assemble.offline if cfg.algorithm.offline else assemble.online
        self.built = await assemble_loop(cfg, ctx.bus, ctx.run_id, state, resume=ctx.args.resume)
        ctx.on_stop(self.built.close)
        self.built.loop.logger = with_prometheus(self.built.loop.logger, ctx.metrics)  # each step's numbers as gauges
        server, port = await start_server(
            [
                registration(
                    learner_pb2_grpc.add_LearnerControlServiceServicer_to_server,
                    LearnerControl(state, audit=control_auditor(cfg.run.dir, ctx.bus.js, ctx.run_id)),
                    "meshrl.learner.v1.LearnerControlService",
                )
            ],
            port=cfg.learner.grpc_port,
        )
        ctx.on_stop(stop_server, server, 1.0)
        acks = await follow_weights_acks(ctx.bus, ctx.run_id, self.built.ledger)
        ctx.on_stop(acks.unsubscribe)
        self.state = state
        log.info("READY grpc=%s:%d", bind_host(), port)

    async def work(self, ctx: ServiceContext) -> None:
        """The loop for learner.steps steps, then the final policy (not when stopped early)."""
        await self.built.loop.run()
        if self.state.stopping.is_set():
            log.warning(
                "stopped before the last step (%s); resume with `meshrl train --resume %s`",
                self.state.message,
                ctx.cfg.run.dir,
            )
            return
        final = await in_trainer_thread(self.built.save_final, RunDir(ctx.cfg.run.dir).final)
        self.built.loop.logger.log_final_model(final)  # its path to the experiment trackers
        log.info("run done: final policy in %s", final)

    def stop_gracefully(self, reason: str) -> bool:
        """Preemption: finish (or abandon, if still gathering) the current step, checkpoint,
        exit 0, so interruptible machines lose at most one step."""
        if self.state is None:
            return False
        log.warning("%s: finishing the current step, then checkpoint and exit", reason)
        self.state.request_stop(reason)
        return True


async def follow_weights_acks(bus, run_id: str, ledger: Ledger):
    """Record every rollout replica's "loaded version N" in the group ledger."""

    async def on_ack(msg):
        ack = common_pb2.WeightsLoaded()
        ack.ParseFromString(msg.data)
        ledger.weights_loaded(ack)
        if not ack.ok:
            log.error("replica %s failed to load weights v%d: %s", ack.replica_id, ack.version, ack.error)

    return await bus.nc.subscribe(names.weights_loaded_subject(run_id), cb=on_ack)


def is_follower() -> bool:
    """A rank > 0 of torchrun's world (ranks.py), read from torchrun's environment."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and int(os.environ.get("RANK", "0")) > 0


def main(argv: list[str] | None = None) -> int:
    keep_freed_memory()  # steps reuse their tensors' pages (meshrl/service/malloc.py)
    if is_follower():  # torchrun's rank > 0: no NATS, no servers, rank 0's commands
        from meshrl.services.learner import ranks  # lazy: the heavy half, as in LearnerProcess.start

        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
        return ranks.follower_main(parse_service_args(LearnerProcess(), argv))
    return run_service(LearnerProcess(), argv, description=__doc__.splitlines()[0])
