"""The learner's offline loop (DPO): preference pairs in, no sampling, no reward.

    for each step:
        take `prompts_per_step` pairs from the dataset (epoch-shuffled, resumable cursor)
        ask the reference service for Σ log π_ref of every chosen and rejected response
        one DPO update on the pairs (the learner core's DPOStep)
        log metrics

Same metric logger, control service and final export as the online loop.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from meshrl.batch import PreferenceBatch
from meshrl.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.metric_logger import MetricLogger
from meshrl.services.learner.reference_client import ReferenceClient


@dataclass
class OfflineLearner:
    cfg: RunConfig
    pairs: object  # PreferenceDataset
    dpo_step: object  # DPOStep: (PreferenceBatch, step) -> metrics
    reference: ReferenceClient
    logger: MetricLogger
    state: LearnerState
    pad_id: int

    async def run(self, start_step: int = 0) -> None:
        await self.reference.wait_ready()
        self.state.state = common_pb2.RUN_STATE_RUNNING
        for step in range(start_step, self.cfg.learner.steps):
            await self.state.wait_if_paused()
            t0 = time.perf_counter()
            batch = await self.next_batch()
            t1 = time.perf_counter()
            metrics = await asyncio.to_thread(self.dpo_step, batch, step)
            metrics.update({"time/reference": t1 - t0, "time/step": time.perf_counter() - t0})
            self.logger.log(step, metrics)
            self.state.step, self.state.last_metrics = step + 1, metrics
        self.state.state = common_pb2.RUN_STATE_DONE

    async def next_batch(self) -> PreferenceBatch:
        items = self.pairs.next_batch(self.cfg.learner.prompts_per_step)
        prompts = [it.prompt_ids for it in items] * 2
        responses = [it.chosen_ids for it in items] + [it.rejected_ids for it in items]
        sums = await self.reference.summed_logprobs(prompts, responses)
        return PreferenceBatch.from_sequences(
            [it.prompt_ids for it in items], [it.chosen_ids for it in items],
            [it.rejected_ids for it in items], self.pad_id,
            ref_chosen_logps=sums[:len(items)], ref_rejected_logps=sums[len(items):])
