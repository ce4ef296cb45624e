"""The learner's evaluation hook: held-out accuracy every `eval.every` steps, and samples.jsonl.

The loop holds one object from `build_learner_eval(cfg, bus, tokenizer, run_dir)` and calls

    hook.write_train(step + 1, gathered.groups)                              # every step
    metrics.update(await hook.maybe_run(step + 1, self.version))             # every step
    await hook.close()                                                       # at the end

`step` counts finished steps (1-based; `maybe_run(0, version)` before the first step runs
the `eval.at_start` evaluation). `maybe_run` evaluates when `step` is a multiple of
`eval.every` or the last step, else returns {} at once. It finds the rollout and reward
replicas' gRPC addresses in the run KV (`meshrl.transport.bus.registry`), waits up to
`eval.wait_for_version_s` until every rollout replica holds weights version ≥ `version`,
runs `meshrl.eval.Evaluator` on `data.eval`, appends `eval.samples_per_step` of the greedy
answers to RUN_DIR/samples.jsonl and returns the `eval/*` metrics. When evaluation is off
(`eval.every=0` and no `at_start`), the builder returns `NoEval`: the same methods, where
`maybe_run` always returns {} (train samples are still written).

An evaluation that cannot run (no replica announced, weights not loaded in time, a gRPC
failure) is skipped with a warning naming the reason, and returns {}: a diagnostic never
stops a training run. Simplification: the loop waits for the evaluation (its time is
`eval/time_s`); it is not overlapped with training.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Sequence

from meshrl.api.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.eval import EvalUnavailable
from meshrl.eval.evaluator import Evaluator
from meshrl.eval.plan import EvalPlan
from meshrl.eval.reward_client import RewardClient
from meshrl.eval.rollout_pool import RolloutPool
from meshrl.eval.samples import SampleWriter
from meshrl.inputs.data.prompts import PromptDataset, PromptItem
from meshrl.transport.bus.registry import service_addresses

log = logging.getLogger("meshrl.learner.eval")


class NoEval:
    """Evaluation off: `maybe_run` is a no-op; trained samples still go to samples.jsonl."""

    def __init__(self, samples: SampleWriter):
        self.samples = samples

    def write_train(self, step: int, groups: Sequence[common_pb2.Group]) -> None:
        self.samples.write_train(step, groups)

    def due(self, step: int) -> bool:
        return False

    async def maybe_run(self, step: int, version: int) -> dict[str, float]:
        return {}

    async def close(self) -> None:
        pass


class LearnerEval(NoEval):
    def __init__(self, cfg: RunConfig, state, items: Sequence[PromptItem], samples: SampleWriter, run_id: str):
        super().__init__(samples)
        self.cfg, self.state, self.items, self.run_id = cfg, state, list(items), run_id
        self.plan = EvalPlan.from_run_config(cfg)

    def due(self, step: int) -> bool:
        every = self.cfg.eval.every
        if step == 0:
            return self.cfg.eval.at_start
        return every > 0 and (step % every == 0 or step == self.cfg.learner.steps)

    async def maybe_run(self, step: int, version: int) -> dict[str, float]:
        if not self.due(step):
            return {}
        try:
            return await self.run(step, version)
        except EvalUnavailable as err:
            log.warning("step %d: evaluation skipped: %s", step, err)
            return {}

    async def run(self, step: int, version: int) -> dict[str, float]:
        """Evaluate weights `version` now; EvalUnavailable when rollout or reward cannot."""
        rollout_at = await self.announced("rollout")
        reward_at = await self.announced("reward")
        pool = RolloutPool(rollout_at)
        try:
            reward = RewardClient(reward_at, self.plan.component_names, self.run_id)
            try:
                await pool.wait_for_version(version, timeout_s=self.cfg.eval.wait_for_version_s)
                result = await Evaluator(self.plan, pool, reward, self.run_id).run(
                    self.items, tag=f"step{step}", min_version=version
                )
            finally:
                await reward.close()
        finally:
            await pool.close()
        self.samples.write_eval(step, result.greedy())
        log.info(
            "step %d: eval on v%d: %s", step, version, ", ".join(f"{k}={v:.4g}" for k, v in result.metrics.items())
        )
        return result.metrics

    async def announced(self, kind: str) -> list[str]:
        """The replicas of `kind` in the run KV, waiting for the first one to appear (at the
        start of a run the learner is up long before vLLM has loaded)."""
        deadline = time.monotonic() + self.cfg.eval.wait_for_version_s
        while not (found := await service_addresses(self.state, kind)) and time.monotonic() < deadline:
            await asyncio.sleep(1.0)
        return found  # empty: the pool / client raise EvalUnavailable naming the service


def build_learner_eval(cfg: RunConfig, bus, tokenizer, run_dir: str | Path) -> NoEval:
    """`LearnerEval` when `eval.every` or `eval.at_start` is set, else `NoEval`.

    Reads and tokenizes `data.eval` now, so a bad eval file fails at start-up (DatasetError).
    """
    samples = SampleWriter.for_run(run_dir, cfg.eval.samples_per_step, seed=cfg.run.seed, tokenizer=tokenizer)
    if not (cfg.eval.every or cfg.eval.at_start):
        return NoEval(samples)
    dataset = PromptDataset.from_config(cfg.data, tokenizer, seed=cfg.run.seed, split="eval")
    log.info("eval split: %d prompts from %s (%s used)", len(dataset), cfg.data.eval, cfg.eval.max_prompts or "all")
    return LearnerEval(cfg, bus.state, dataset.items, samples, bus.run_id)
