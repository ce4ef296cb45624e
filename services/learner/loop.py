"""The learner's loop: sample → score → update → push, one step at a time.

    resume (when asked): weights, optimizer, dataset cursor, in-flight draws, trained ids;
        republish the resumed weights so rollout samples with them
    for each step:
        wait while paused
        gather `prompts_per_step` ready groups (the feeder keeps prompts flowing in the
            background within the in-flight bound; stale / failed / no-signal groups are
            dropped and counted); a stop request while gathering abandons the step, and so
            does a gather that gives up (an outage past its wait, too many groups dropped
            in a row): then checkpoint (if a step was trained) and stop with its message
        turn them into one RolloutBatch (the exact token ids the rollout produced)
        train on it (the learner core: registered advantage estimator + policy loss)
        every `push_every` steps: publish the new weights (version + 1)
        ack the trained groups (only now: a crash before this loses nothing)
        every `eval.every` steps: held-out accuracy through rollout; samples to samples.jsonl
        log metrics; judge them with the alert rules; checkpoint when due or asked
        an alert whose action is pause / stop: checkpoint first, then pause / stop
    checkpoint at the end, or when stopped (SIGTERM: preemption)

The loop never looks at the algorithm's name; all of that lives in the step.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from meshrl.alerts.types import strongest_action
from meshrl.algos.kl_control import controller_state, restore_controller
from meshrl.api.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.config.parts import turn_credited_components
from meshrl.run.audit import audit_alert_actions
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.gather import Gatherer, GatherGaveUp, StepGroups
from meshrl.services.learner.groups import groups_to_batch
from meshrl.services.learner.metric_logger import MetricLogger
from meshrl.services.learner.parts import (
    AlertJudge,
    CheckpointStore,
    HealthProbe,
    StepEvaluation,
    TrainStep,
    WeightsExport,
    WeightsPush,
)
from meshrl.services.learner.step_metrics import queue_depths, rollout_metrics, step_line, step_times, with_derived
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.telemetry.tracing import set_policy_version, step_span

log = logging.getLogger("meshrl.learner")


@dataclass
class Learner:
    cfg: RunConfig
    feeder: PromptFeeder
    gatherer: Gatherer
    train_step: TrainStep
    publisher: WeightsPush
    export_weights: WeightsExport
    checkpoints: CheckpointStore
    alerts: AlertJudge  # rules off = a no-op
    logger: MetricLogger
    state: LearnerState
    pad_id: int
    need_ref: bool
    evaluation: StepEvaluation  # samples.jsonl every step, held-out eval every N steps
    health: HealthProbe  # probes the services in the background, feeds `alerts`
    version: int = 0
    step: int = 0  # steps completed
    saved_step: int = -1  # the step of the newest checkpoint this process wrote or loaded
    trained_ids: list[str] = field(default_factory=list)
    held_back: list[str] = field(default_factory=list)  # trained, settled after an exclusive evaluation
    restarted: bool = False  # this process took over a run another learner process began

    async def run(self) -> None:
        if self.version > 0 or self.restarted:
            # A resumed run: rollout must sample with these weights, and forget any newer
            # version the dead learner pushed after its checkpoint (or before its first one:
            # then these are the base weights, version 0) - else every group is "future".
            await self.republish_weights()
        watching = asyncio.create_task(self.health.run(), name="health-watch")
        self.state.state = common_pb2.RUN_STATE_RUNNING
        at_start, feeding = await self.evaluate_base_and_feed()
        try:
            while self.step < self.cfg.learner.steps and not self.state.stopping.is_set():
                await self.state.wait_if_paused()
                metrics = await self.one_step(self.step)
                if metrics is None:
                    break  # a stop arrived while gathering: the step is abandoned
                metrics.update({k.replace("eval/", "eval_start/"): v for k, v in at_start.items()})
                at_start = {}
                await self.after_step(self.step, metrics)
                if feeding.done():
                    feeding.result()  # surface the feeder's error
        finally:
            feeding.cancel()
            watching.cancel()
            await self.evaluation.close()
        await self.publisher.drain()  # the last push's notice is out
        await self.save(why="stopped" if self.state.stopping.is_set() else "end of run")
        self.state.state = common_pb2.RUN_STATE_DONE

    async def evaluate_base_and_feed(self) -> tuple[dict[str, float], asyncio.Task]:
        """The base model's evaluation (a fresh run's) and the feeder, started after the
        evaluation when it is exclusive (`eval.exclusive`), else beside it."""
        fresh, exclusive = self.step == 0, self.cfg.eval.exclusive
        at_start = await self.evaluation.maybe_run(0, self.version) if fresh and exclusive else {}
        feeding = asyncio.create_task(self.feeder.run(), name="feeder")
        if fresh and not exclusive:
            at_start = await self.evaluation.maybe_run(0, self.version)
        return at_start, feeding

    async def one_step(self, step: int) -> dict[str, float] | None:
        t0 = time.perf_counter()
        gathered = await self.gather_unless_stopped()
        if gathered is None:
            return None
        batch = groups_to_batch(
            gathered.groups,
            pad_id=self.pad_id,
            need_ref=self.need_ref,
            turn_credit=turn_credited_components(self.cfg.reward.components),
        )
        t_train = time.perf_counter()
        with step_span(step, [m.headers for m in gathered.messages]):  # links to each group's trace
            metrics = await in_trainer_thread(self.train_step, batch, step)
        metrics["time/train"] = time.perf_counter() - t_train
        if (step + 1) % self.cfg.learner.push_every == 0:
            metrics.update(await self.push_weights(step))
        await gathered.ack()
        self.record_trained(gathered, step)
        metrics.update(rollout_metrics(gathered.groups, version=self.version, trained_total=len(self.trained_ids)))
        metrics.update(await queue_depths(self.gatherer.bus))
        metrics.update(step_times(gathered, step_s=time.perf_counter() - t0, dropped=self.gatherer.totals))
        metrics["groups/rollout_dropped_total"] = float(self.gatherer.rollout_dropped)
        return with_derived(metrics)

    async def gather_unless_stopped(self) -> StepGroups | None:
        """The step's groups, or None when a stop request comes first (nothing trained yet;
        the groups in flight are saved as pending draws and re-issued on resume)."""
        collect = asyncio.ensure_future(self.gatherer.collect(self.cfg.learner.prompts_per_step, version=self.version))
        stop = asyncio.ensure_future(self.state.stopping.wait())
        await asyncio.wait({collect, stop}, return_when=asyncio.FIRST_COMPLETED)
        stop.cancel()
        if collect.done() and isinstance(collect.exception(), GatherGaveUp):
            # an outage past its wait, or groups that keep being dropped: checkpoint, stop, resume later
            self.state.request_stop(str(collect.exception()))
            log.error("step %d: %s", self.step, collect.exception())
            return None
        if collect.done():
            return collect.result()
        collect.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await collect
        log.warning("stop requested while gathering step %d: step abandoned", self.step)
        return None

    def record_trained(self, gathered: StepGroups, step: int) -> None:
        ids = [g.group_id for g in gathered.groups]
        for group in gathered.groups:
            self.gatherer.ledger.trained(group, step)
        self.evaluation.write_train(step + 1, gathered.groups)  # a few samples for spot checks
        self.trained_ids.extend(ids)
        if self.cfg.eval.exclusive and self.evaluation.due(step + 1):
            self.held_back = ids  # the next prompts wait for the evaluation (after_step)
        else:
            self.feeder.settle(ids, trained=True)  # after the push: the next prompts ask for the new version
        self.state.groups_trained = len(self.trained_ids)
        self.state.groups_dropped_stale = self.gatherer.totals["stale"]
        self.state.in_flight = self.feeder.state.in_flight

    async def after_step(self, step: int, metrics: dict[str, float]) -> None:
        metrics.update(await self.evaluation.maybe_run(step + 1, self.version))  # {} between evals
        if self.held_back:
            self.feeder.settle(self.held_back, trained=True)
            self.held_back = []
        self.logger.log(step, metrics)
        log.info("%s", step_line(step, self.cfg.learner.steps, metrics))
        self.step = step + 1
        self.state.step, self.state.last_metrics = self.step, metrics
        alerts = self.alerts.observe(step, metrics)
        every = self.cfg.learner.checkpoint_every
        if every and self.step % every == 0 and self.step < self.cfg.learner.steps:
            await self.save(why=f"every {every} steps")
        await self.answer_checkpoint_requests()
        await self.act_on(alerts)

    async def act_on(self, alerts) -> None:
        """An alert asking to pause or stop the run gets a checkpoint first."""
        action = strongest_action(alerts)
        if action == "none":
            return
        reason = "; ".join(f"{a.rule}: {a.message}" for a in alerts if a.action == action)
        await self.save(why=f"alert ({action})")
        # audit.jsonl and the events subject: who = "alert:<rule>", what = the action and its checkpoint
        await audit_alert_actions(
            self.cfg.run.dir,
            self.gatherer.bus.js,
            self.state.run_id,
            action,
            [a for a in alerts if a.action == action],
            step=self.step,
            checkpoint_step=self.saved_step,
        )
        if action == "pause":
            self.state.pause(f"alert: {reason}")
        else:
            self.state.request_stop(f"alert: {reason}")

    async def push_weights(self, step: int) -> dict[str, float]:
        """Publish the next version. A file push's write, digest and notice run on while the
        next step trains (services/learner/weights.py); its figures come with the push after."""
        figures = await self.publisher.drain()
        self.version += 1
        state_dict = await in_trainer_thread(self.export_weights)
        figures.update(await self.publisher.publish(state_dict, version=self.version, step=step))
        self.feeder.set_version(self.version)
        set_policy_version(self.version)
        self.state.policy_version = self.version
        return figures

    async def republish_weights(self) -> None:
        """After a resume: publish the checkpoint's weights under the version they had."""
        state_dict = await in_trainer_thread(self.export_weights)
        await self.publisher.publish(state_dict, version=self.version, step=max(self.step - 1, 0))
        await self.publisher.drain()
        self.feeder.set_version(self.version)
        set_policy_version(self.version)
        self.state.policy_version = self.version

    def snapshot(self) -> dict:
        """The loop's part of a checkpoint (JSON): enough to continue without loss or repeat."""
        return {
            "step": self.step,
            "policy_version": self.version,
            "feeder": self.feeder.state_dict(),
            "trained_group_ids": list(self.trained_ids),
            "dropped": dict(self.gatherer.totals),
            "rollout_dropped": self.gatherer.rollout_dropped,
            **controller_state(self.train_step),
        }  # the adaptive KL and entropy coefficients

    def restore(self, saved: dict) -> None:
        self.step, self.version = int(saved["step"]), int(saved["policy_version"])
        self.saved_step = self.step
        self.feeder.load_state_dict(saved["feeder"])
        self.trained_ids = list(saved["trained_group_ids"])
        self.feeder.trained = len(self.trained_ids)
        self.gatherer.seen.update(self.trained_ids)  # a redelivered old group is not retrained
        self.gatherer.totals.update(saved["dropped"])
        self.gatherer.rollout_dropped = int(saved.get("rollout_dropped", 0))  # older checkpoints: none
        restore_controller(self.train_step, saved)
        self.state.step, self.state.groups_trained = self.step, len(self.trained_ids)

    async def save(self, *, why: str, tag: str | None = None):
        """Checkpoint the current step; a step already saved is only tagged. Returns its path
        (None before the first step: there is nothing to resume)."""
        if self.step == 0:
            return None
        if self.step == self.saved_step:
            return (
                await in_trainer_thread(self.checkpoints.tag, self.step, tag)
                if tag
                else self.checkpoints.path_of(self.step)
            )
        log.info("checkpoint at step %d (%s)", self.step, why)
        path = await in_trainer_thread(self.checkpoints.save, self.step, self.snapshot(), tag)
        self.saved_step = self.step
        return path

    async def answer_checkpoint_requests(self) -> None:
        while not self.state.checkpoint_requests.empty():
            tag, done = self.state.checkpoint_requests.get_nowait()
            path = await self.save(why="requested", tag=tag or None)
            done.set_result((self.step, str(path or "")))
