"""`Evaluator`: a held-out split through rollout and reward over gRPC → metrics and samples.

For every eval prompt (tokenized by `meshrl.inputs.data.PromptDataset`, exactly as training
prompts are; played as episodes in the run's environment when it has one) it asks for one greedy answer and, when pass@k is asked, `pass_n` samples at
the k temperature (`EvalPlan`). Tasks go `batch_size` at a time to `RolloutService.Generate`,
two batches in flight per replica (`RolloutPool` spreads them); each batch is scored through
`RewardService.Score` as soon as it is back, so scoring overlaps generation. Then every
sample is judged (correct.py) and the metrics computed (metrics.py).

    evaluator = Evaluator(plan, RolloutPool(addrs), RewardClient(addrs2, plan.component_names), run_id)
    result = await evaluator.run(dataset.items, tag="step10", min_version=3)
    result.metrics["eval/accuracy"], result.samples

`min_version`: a reply made with older weights raises `EvalUnavailable` (the caller waits for
the replicas first: `RolloutPool.wait_for_version`).

Simplification: a failed batch fails the whole evaluation (no retry on another replica
beyond gRPC's own retries on UNAVAILABLE).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from meshrl.api.common.v1 import common_pb2
from meshrl.eval import EvalUnavailable
from meshrl.eval.correct import judge
from meshrl.eval.metrics import summarize
from meshrl.eval.plan import EvalPlan
from meshrl.eval.records import EvalSample, from_group, with_environment_reward
from meshrl.eval.reward_client import RewardClient
from meshrl.eval.rollout_pool import RolloutPool
from meshrl.inputs.data.prompts import PromptItem
from meshrl.inputs.data.task_fields import task_fields
from meshrl.transport.bus.codec import pack_int32

BATCHES_PER_REPLICA = 2


@dataclass
class EvalResult:
    metrics: dict[str, float]
    samples: list[EvalSample] = field(default_factory=list)

    def greedy(self) -> list[EvalSample]:
        return [s for s in self.samples if s.mode == "greedy"]


class Evaluator:
    def __init__(self, plan: EvalPlan, rollout: RolloutPool, reward: RewardClient, run_id: str = "eval"):
        self.plan, self.rollout, self.reward, self.run_id = plan, rollout, reward, run_id

    def tasks(self, items: Sequence[PromptItem], tag: str) -> list[tuple[int, str, common_pb2.PromptTask]]:
        """(prompt index, mode, task) for every greedy and pass@k request."""
        out = []
        for i, item in enumerate(items):
            out.append((i, "greedy", self.task(item, f"{tag}-{i}-greedy", self.plan.greedy_sampling())))
            if self.plan.pass_n:
                out.append((i, "sampled", self.task(item, f"{tag}-{i}-k", self.plan.k_sampling(i))))
        return out

    def task(self, item: PromptItem, name: str, sampling: common_pb2.SamplingParams) -> common_pb2.PromptTask:
        return common_pb2.PromptTask(
            run_id=self.run_id,
            group_id=f"{self.run_id}-eval-{name}",
            prompt_text=item.text,
            prompt_token_ids=pack_int32(item.prompt_ids),
            sampling=sampling,
            **task_fields(item.row),
            metadata={"split": "eval"},
            dataset_index=item.row.ref.index,
            created_unix=time.time(),
            environment=self.plan.environment,
        )

    async def run(
        self,
        items: Sequence[PromptItem],
        *,
        tag: str = "eval",
        min_version: int = 0,
        on_progress: Callable[[int], None] | None = None,
    ) -> EvalResult:
        """Evaluate `items` (the first `plan.max_prompts`); `on_progress(prompts done)` per batch."""
        items = list(items)[: self.plan.max_prompts]
        started = time.perf_counter()
        requests = self.tasks(items, tag)
        size = self.plan.batch_size * (2 if self.plan.pass_n else 1)  # both modes of a prompt together
        batches = [requests[i : i + size] for i in range(0, len(requests), size)]
        gate = asyncio.Semaphore(BATCHES_PER_REPLICA * len(self.rollout.replicas))
        done = await asyncio.gather(*(self._batch(b, gate, min_version, on_progress) for b in batches))
        samples = sorted(
            (s for batch in done for s in batch), key=lambda s: (s.prompt_index, s.mode != "greedy", s.sample_index)
        )
        errors = judge(samples, self.plan.correct_component, self.plan.correct_threshold)
        metrics = summarize(samples, k=self.plan.pass_k, score_errors=errors)
        metrics["eval/time_s"] = time.perf_counter() - started
        return EvalResult(metrics, samples)

    async def _batch(
        self, batch, gate: asyncio.Semaphore, min_version: int, on_progress: Callable[[int], None] | None
    ) -> list[EvalSample]:
        """Generate one batch, check its version, score it."""
        async with gate:
            reply = await self.rollout.generate([t for _, _, t in batch], timeout_s=self.plan.timeout_s)
        if reply.policy_version < min_version:
            raise EvalUnavailable(
                f"a rollout replica answered with weights version "
                f"{reply.policy_version}, older than the {min_version} to evaluate"
            )
        by_id = {g.group_id: g for g in reply.groups}
        if missing := [t.group_id for _, _, t in batch if t.group_id not in by_id]:
            raise EvalUnavailable(f"a rollout replica answered without groups {missing[:3]}")
        samples = [s for i, mode, t in batch for s in from_group(by_id[t.group_id], i, mode)]
        await self.reward.score(samples, timeout_s=self.plan.timeout_s)
        with_environment_reward(samples, self.plan.environment_components)
        if on_progress is not None:
            on_progress(len({i for i, _, _ in batch}))
        return samples
