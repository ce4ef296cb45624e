"""The learner's loop: sample → score → update → push, one step at a time.

    for each step:
        wait while paused
        gather `prompts_per_step` ready groups (the feeder keeps prompts flowing in the
            background within the in-flight bound; stale / failed / no-signal groups are
            dropped and counted)
        turn them into one RolloutBatch (the exact token ids the rollout produced)
        train on it (the learner core: registered advantage estimator + policy loss)
        every `push_every` steps: publish the new weights (version + 1)
        ack the trained groups (only now: a crash before this loses nothing)
        log metrics, answer checkpoint requests

The loop never looks at the algorithm's name; all of that lives in the step.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

import numpy as np

from meshrl.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.gather import Gatherer, StepGroups
from meshrl.services.learner.groups import groups_to_batch
from meshrl.services.learner.metric_logger import MetricLogger
from meshrl.services.learner.weights import WeightsPublisher
from meshrl.telemetry.tracing import set_policy_version, step_span

log = logging.getLogger("meshrl.learner")


@dataclass
class Learner:
    cfg: RunConfig
    feeder: PromptFeeder
    gatherer: Gatherer
    train_step: object  # TrainStep: (batch, step) -> metrics
    publisher: WeightsPublisher
    export_weights: object  # () -> state dict for the rollout engines
    save_checkpoint: object  # (step, tag) -> path
    logger: MetricLogger
    state: LearnerState
    pad_id: int
    need_ref: bool
    version: int = 0

    async def run(self, start_step: int = 0) -> None:
        feeding = asyncio.create_task(self.feeder.run(), name="feeder")
        self.state.state = common_pb2.RUN_STATE_RUNNING
        try:
            for step in range(start_step, self.cfg.learner.steps):
                await self.state.wait_if_paused()
                metrics = await self.one_step(step)
                self.logger.log(step, metrics)
                self.state.step, self.state.last_metrics = step + 1, metrics
                await self.answer_checkpoint_requests(step)
                if feeding.done():
                    feeding.result()  # surface the feeder's error
        finally:
            feeding.cancel()
        self.state.state = common_pb2.RUN_STATE_DONE

    async def one_step(self, step: int) -> dict[str, float]:
        t0 = time.perf_counter()
        gathered = await self.gatherer.collect(self.cfg.learner.prompts_per_step, version=self.version)
        batch = groups_to_batch(gathered.groups, pad_id=self.pad_id, need_ref=self.need_ref)
        t_train = time.perf_counter()
        with step_span(step, [m.headers for m in gathered.messages]):  # links to each group's trace
            metrics = await asyncio.to_thread(self.train_step, batch, step)
        metrics["time/train"] = time.perf_counter() - t_train
        if (step + 1) % self.cfg.learner.push_every == 0:
            metrics.update(await self.push_weights(step))
        await gathered.ack()
        for group in gathered.groups:
            self.gatherer.ledger.trained(group, step)
        self.feeder.settle(len(gathered.groups))  # after the push: the next prompts ask for it
        self.state.groups_trained += len(gathered.groups)
        self.state.groups_dropped_stale = self.gatherer.totals["stale"]
        self.state.in_flight = self.feeder.state.in_flight
        metrics.update(self.rollout_metrics(gathered, step_s=time.perf_counter() - t0))
        metrics["mesh/overhead_share"] = overhead_share(metrics)
        return metrics

    async def push_weights(self, step: int) -> dict[str, float]:
        self.version += 1
        state_dict = await asyncio.to_thread(self.export_weights)
        figures = await self.publisher.publish(state_dict, version=self.version, step=step)
        self.feeder.set_version(self.version)
        set_policy_version(self.version)
        self.state.policy_version = self.version
        return figures

    def rollout_metrics(self, gathered: StepGroups, *, step_s: float) -> dict[str, float]:
        samples = [s for g in gathered.groups for s in g.samples]
        lengths = np.array([len(s.response_token_ids) // 4 for s in samples], dtype=np.float64)
        prompt_tokens = sum(len(g.task.prompt_token_ids) // 4 * len(g.samples) for g in gathered.groups)
        staleness = [self.version - 1 - g.policy_version for g in gathered.groups]
        out = {
            "weights_version": float(self.version),
            "staleness/mean": float(np.mean(staleness)) if staleness else 0.0,
            "completions/max_length": float(lengths.max(initial=0)),
            "completions/clipped_ratio": float(np.mean([s.finish_reason == common_pb2.FINISH_REASON_LENGTH for s in samples])),
            "time/step": step_s,
            "time/wait_for_batch": gathered.wait_s,
            "perf/throughput": (lengths.sum() + prompt_tokens) / max(step_s, 1e-9),
            "groups/trained_total": float(self.state.groups_trained),
        }
        out.update({f"groups/dropped_{k}": float(v) for k, v in self.gatherer.totals.items()})
        out.update(stage_times(gathered.groups))
        return out

    async def answer_checkpoint_requests(self, step: int) -> None:
        while not self.state.checkpoint_requests.empty():
            tag, done = self.state.checkpoint_requests.get_nowait()
            path = await asyncio.to_thread(self.save_checkpoint, step + 1, tag)
            done.set_result((step + 1, str(path)))


def covered(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end] intervals: time when at least one was running."""
    total, end_so_far = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > end_so_far:
            total += end - max(start, end_so_far)
            end_so_far = end
    return total


def stage_times(groups) -> dict[str, float]:
    """Per stage (generate, reward, reference): mean time per group, and the wall time the
    stage was busy during the step (union over groups, which run concurrently)."""
    spans: dict[str, list[tuple[float, float]]] = {}
    for group in groups:
        for t in group.timings:
            spans.setdefault(t.stage, []).append((t.start_unix, t.end_unix))
    out = {f"time/{stage}": float(np.mean([e - s for s, e in v])) for stage, v in spans.items()}
    out.update({f"time/{stage}_busy": covered(v) for stage, v in spans.items()})
    out["time/services_busy"] = covered([iv for v in spans.values() for iv in v])
    return out


def overhead_share(metrics: dict[str, float]) -> float:
    """The mesh's own share of the step: everything but generation, reward, reference and
    training compute (queues, transport, weight push, bookkeeping)."""
    step = metrics.get("time/step", 0.0)
    compute = metrics.get("time/train", 0.0) + metrics.get("time/services_busy", 0.0)
    return max(0.0, step - compute) / step if step > 0 else 0.0
