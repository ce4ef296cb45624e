"""The learner's offline loop (DPO): preference pairs in, no sampling, no reward.

    for each step:
        take `prompts_per_step` pairs from the dataset (epoch-shuffled, resumable cursor)
        ask the reference service for Σ log π_ref of every chosen and rejected response
            (per token, LD-weighted here, when algorithm.dpo_ld_alpha is set)
        one DPO update on the pairs (the learner core's DPOStep)
        log metrics; checkpoint every `learner.checkpoint_every` steps
    checkpoint at the end, or when stopped (SIGTERM); `--resume` restores step and cursor

Same metric logger, control service and final export as the online loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from meshrl.algos.batch import PreferenceBatch, pad_right
from meshrl.algos.preference_weighting import ld_weighted_sums
from meshrl.api.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.metric_logger import MetricLogger
from meshrl.services.learner.parts import CheckpointStore, PreferencePairs, PreferenceStep
from meshrl.services.learner.reference_client import ReferenceClient
from meshrl.services.learner.trainer_thread import in_trainer_thread


@dataclass
class OfflineLearner:
    cfg: RunConfig
    pairs: PreferencePairs
    dpo_step: PreferenceStep
    reference: ReferenceClient
    logger: MetricLogger
    state: LearnerState
    pad_id: int
    checkpoints: CheckpointStore
    step: int = 0  # steps completed
    saved_step: int = 0

    async def run(self) -> None:
        await self.reference.wait_ready()
        self.state.state = common_pb2.RUN_STATE_RUNNING
        every = self.cfg.learner.checkpoint_every
        while self.step < self.cfg.learner.steps and not self.state.stopping.is_set():
            await self.state.wait_if_paused()
            t0 = time.perf_counter()
            batch = await self.next_batch()
            t1 = time.perf_counter()
            metrics = await in_trainer_thread(self.dpo_step, batch, self.step)
            metrics.update({"time/reference": t1 - t0, "time/step": time.perf_counter() - t0})
            self.logger.log(self.step, metrics)
            self.step += 1
            self.state.step, self.state.last_metrics = self.step, metrics
            if every and self.step % every == 0 and self.step < self.cfg.learner.steps:
                await self.save()
        await self.save()
        self.state.state = common_pb2.RUN_STATE_DONE

    async def save(self) -> None:
        if self.step > self.saved_step:
            state = {
                "step": self.step,
                "policy_version": 0,
                "pairs_cursor": self.pairs.state_dict(),
                "trained_group_ids": [],
                # what a preference loss keeps across steps (bco_pair's running mean)
                "preference_loss_state": dict(self.dpo_step.loss_state),
            }
            await in_trainer_thread(self.checkpoints.save, self.step, state)
            self.saved_step = self.step

    def restore(self, saved: dict) -> None:
        self.step = self.saved_step = int(saved["step"])
        self.pairs.load_state_dict(saved["pairs_cursor"])
        self.dpo_step.loss_state.update(saved.get("preference_loss_state", {}))  # older checkpoints carry none
        self.state.step = self.step

    async def reference_sums(self, prompts, responses) -> np.ndarray:
        """Σ log π_ref per response (chosen rows then rejected rows), LD-weighted like the
        policy's when algorithm.dpo_ld_alpha is set."""
        alpha = self.cfg.algorithm.dpo_ld_alpha
        if alpha is None:
            return await self.reference.summed_logprobs(prompts, responses)
        tokens = await self.reference.token_logprobs(prompts, responses)
        logps, mask = pad_right(tokens, 0.0, np.float32)
        weighted = ld_weighted_sums(torch.from_numpy(logps), torch.from_numpy(mask).float(), alpha=alpha)
        return weighted.numpy()

    async def next_batch(self) -> PreferenceBatch:
        items = self.pairs.next_batch(self.cfg.learner.prompts_per_step)
        prompts = [it.prompt_ids for it in items] * 2
        responses = [it.chosen_ids for it in items] + [it.rejected_ids for it in items]
        sums = await self.reference_sums(prompts, responses)
        return PreferenceBatch.from_sequences(
            [it.prompt_ids for it in items],
            [it.chosen_ids for it in items],
            [it.rejected_ids for it in items],
            self.pad_id,
            ref_chosen_logps=sums[: len(items)],
            ref_rejected_logps=sums[len(items) :],
        )
