"""Assembling the learner's loop from its parts, for an online run or an offline (DPO) one.

`online(...)` / `offline(...)` build model, data, trainer, transport, checkpoints and
alerts from the run config and return a `Built` whose `loop.run()` trains. When `resume`
names a run dir or a checkpoint, the online loop is restored from it before it starts
(see `checkpointing.py`). Kept apart from `main.py`, which owns the process: arguments,
servers, signals.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from meshrl.alerts.engine import AlertEngine
from meshrl.config import RunConfig
from meshrl.config.alerts import AlertsConfig
from meshrl.config.lora import pushes_adapter
from meshrl.config.sampling import logprob_temperature
from meshrl.run_layout import RunDir
from meshrl.services.learner import build, ranks
from meshrl.services.learner.checkpointing import LearnerCheckpoints
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.evaluation import build_learner_eval
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.gather import Gatherer
from meshrl.services.learner.health_watch import HealthWatch
from meshrl.services.learner.ledger import Ledger, read_ledger, unsettled_groups
from meshrl.services.learner.loop import Learner
from meshrl.services.learner.lora import adapter_config_json
from meshrl.services.learner.metric_logger import JsonlLogger, MetricLogger, MultiLogger, forget_steps_from
from meshrl.services.learner.offline import OfflineLearner
from meshrl.services.learner.ranks import TrainerParts
from meshrl.services.learner.reference_client import ReferenceClient
from meshrl.services.learner.router_stats import with_router_stats
from meshrl.services.learner.trackers import start_trackers
from meshrl.services.learner.train.dpo import DPOStep
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.policy import TrainedModel
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.services.learner.weights import CollectivePublisher, publisher_for
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.publish import publish_with_retry
from meshrl.transport.weights import Transport

if TYPE_CHECKING:  # transformers is imported when the tokenizer is loaded, not at start-up
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger("meshrl.learner")


@dataclass
class Built:
    loop: Learner | OfflineLearner  # online, or offline (DPO): `await loop.run()`
    policy: TrainedModel
    tokenizer: PreTrainedTokenizerBase
    dist: DistContext
    ledger: Ledger
    alerts: AlertEngine
    transport: Transport | CollectivePublisher | None = None  # where weights go (online only); closed at exit
    ranks: TrainerParts | None = None  # online: the trainer's parts, on one process or rank 0 of N

    def close(self) -> None:
        """Flush logs and ledgers; free the weights transport's memory (/dev/shm files);
        release the other torchrun ranks."""
        self.loop.logger.close()
        self.alerts.close()
        self.ledger.close()
        if self.transport is not None:
            self.transport.close()
        if self.ranks is not None:
            self.ranks.close()

    def save_final(self, out_dir: Path) -> Path:
        """The final policy as a Hugging Face model dir (blocking: run it on the trainer thread)."""
        if self.ranks is not None:
            return self.ranks.save_final(out_dir)
        return build.save_pretrained(self.policy, self.tokenizer, self.dist, out_dir)


def pad_id_of(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id


def logger_for(cfg: RunConfig, run_id: str) -> MetricLogger:
    """metrics.jsonl always; the experiment trackers of telemetry.trackers too (started now:
    one that cannot start fails the learner's start-up)."""
    trackers = start_trackers(cfg, run_id)
    jsonl = JsonlLogger(RunDir(cfg.run.dir).metrics)
    return MultiLogger(jsonl, *trackers) if trackers else jsonl


def alert_engine(cfg: RunConfig, bus, run_id: str) -> AlertEngine:
    """The run's alert rules; alerts go to the log, RUN_DIR/alerts.jsonl, the run's NATS
    events subject (header `Meshrl-Event: alert`) and the webhook when configured."""
    subject = names.events_subject(run_id)

    async def publish(alert: dict) -> None:
        await publish_with_retry(bus.js, subject, json.dumps(alert).encode(), headers={"Meshrl-Event": "alert"})

    return AlertEngine.from_config(cfg.alerts, cfg.run.dir, publish=publish, run_id=run_id)


def settle_the_dead_learners_groups(loop: Learner) -> None:
    """After a resume in the same run: the ledger records it (steps from there on are trained
    again), and every group the previous learner published and never settled is dropped as
    "orphaned" now — its draw goes out again under a new id (or was drawn after the
    checkpoint and is drawn anew), so it must never be trained. When it arrives later it is
    acked and ignored as already seen."""
    ledger_path = RunDir(loop.cfg.run.dir).ledger
    orphans = unsettled_groups(read_ledger(ledger_path)) if ledger_path.is_file() else []
    for group_id, min_version in orphans:
        loop.gatherer.ledger.dropped(group_id, "orphaned", min_version)
    loop.gatherer.seen.update(group_id for group_id, _ in orphans)
    loop.gatherer.totals["orphaned"] += len(orphans)
    loop.feeder.after_restart = True
    loop.restarted = True
    loop.gatherer.ledger.resumed(loop.step, loop.version)


def resume_loop(loop: Learner | OfflineLearner, resume: str | None) -> None:
    """Restore the loop from `resume` (a run dir or a checkpoint), if it holds a checkpoint, and
    forget the metrics of the steps it will train again."""
    if resume is None:
        return
    saved = loop.checkpoints.restore_if_any(resume)
    if saved is not None:
        loop.restore(saved)
    again = forget_steps_from(RunDir(loop.cfg.run.dir).metrics, loop.step)
    if again:
        log.info("metrics.jsonl: %d rows of steps ≥ %d dropped (trained again after the resume)", again, loop.step)


async def online(cfg: RunConfig, bus, run_id: str, state: LearnerState, *, resume: str | None = None) -> Built:
    logger = logger_for(cfg, run_id)  # first: a tracker that cannot start fails before the model loads
    dist = ranks.join(cfg.learner.ranks)  # one process, or rank 0 of torchrun's N (ranks.py)
    tokenizer = build.build_tokenizer(cfg)
    dataset = build.build_dataset(cfg, tokenizer)
    policy, trainer = await policy_and_trainer(cfg, tokenizer, dist)
    ledger = Ledger(RunDir(cfg.run.dir).ledger)
    feeder = PromptFeeder(bus, dataset, cfg, run_id, ledger)
    alerts = alert_engine(cfg, bus, run_id)
    publisher, transport = weights_publisher(cfg, bus, run_id, policy, dist)
    loop = Learner(
        cfg=cfg,
        feeder=feeder,
        gatherer=Gatherer(bus, feeder, cfg, ledger=ledger, alerts=alerts, vocab_size=policy.model.config.vocab_size),
        train_step=with_router_stats(trainer.train_step, policy.model),  # + moe/* for an MoE model
        publisher=publisher,
        export_weights=trainer.export_weights,
        checkpoints=trainer.checkpoints,
        alerts=alerts,
        evaluation=build_learner_eval(cfg, bus, tokenizer, cfg.run.dir),
        health=HealthWatch(bus.state, alerts, interval_s=cfg.alerts.service_down.probe_interval_s),
        logger=logger,
        state=state,
        pad_id=pad_id_of(tokenizer),
        need_ref=cfg.reference_enabled,
    )
    state.feeder = feeder.state
    await resume_online(loop, resume)
    return Built(loop, policy, tokenizer, dist, ledger, alerts, transport, ranks=trainer)


async def policy_and_trainer(cfg: RunConfig, tokenizer, dist):
    """The policy (and critic) and the parts that train them, built on the trainer thread:
    torch work stays on that one thread, as a second thread's OpenMP team slows every step."""
    policy, critic = await in_trainer_thread(build.build_policy_model, cfg, dist)
    trainer = await in_trainer_thread(ranks.trainer_parts, cfg, policy, critic, tokenizer, dist)
    return policy, trainer


def weights_publisher(cfg: RunConfig, bus, run_id: str, policy, dist):
    """(publisher, transport) of new weights to the rollouts, told whether the embeddings are
    tied and, for a LoRA run, the adapter's config (pushed with the adapter)."""
    tied = bool(getattr(policy.model.config, "tie_word_embeddings", False))
    adapter = adapter_config_json(policy.model) if pushes_adapter(cfg) else None
    return publisher_for(cfg, bus, run_id, device=dist.device, tied_embeddings=tied, adapter_config=adapter)


async def resume_online(loop: Learner, resume: str | None) -> None:
    """Restore the loop from `resume`, then settle the groups the learner before it left open."""
    await in_trainer_thread(resume_loop, loop, resume)
    if resume is not None:
        settle_the_dead_learners_groups(loop)


async def offline(cfg: RunConfig, bus, run_id: str, state: LearnerState, *, resume: str | None = None) -> Built:
    logger = logger_for(cfg, run_id)
    dist = ranks.join(cfg.learner.ranks)  # one process (the config refuses more for offline runs)
    tokenizer = build.build_tokenizer(cfg)
    pairs = build.build_pairs(cfg, tokenizer)
    policy, _ = await in_trainer_thread(build.build_policy_model, cfg, dist)
    loop = OfflineLearner(
        cfg=cfg,
        pairs=pairs,
        dpo_step=DPOStep(policy, cfg.algorithm, cfg.trainer, dist=dist, temperature=logprob_temperature(cfg)),
        reference=ReferenceClient(cfg.reference.resolved_address, timeout_s=cfg.reference.timeout_s),
        logger=logger,
        state=state,
        pad_id=pad_id_of(tokenizer),
        checkpoints=LearnerCheckpoints(cfg, policy),
    )
    await in_trainer_thread(resume_loop, loop, resume)
    return Built(loop, policy, tokenizer, dist, Ledger(None), AlertEngine(AlertsConfig(enabled=False)))
