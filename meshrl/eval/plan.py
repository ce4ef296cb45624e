"""`EvalPlan`: what an evaluation samples and what counts as correct, read from a RunConfig.

Greedy: temperature 0, one sample, `eval.max_tokens` (default `rollout.sampling.max_tokens`)
and the run's stop strings. pass@k (when `eval.pass_k > 1`): `eval.pass_n` samples (default
k) at `eval.k_temperature` / `eval.k_top_p`, seeded per prompt from `run.seed` so two
evaluations of the same weights draw the same samples. The accuracy rule is documented in
`meshrl/config/eval.py` and implemented in `correct.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshrl.api.common.v1 import common_pb2
from meshrl.config.parts import ENVIRONMENT_REWARD_KIND
from meshrl.config.sampling import greedy_sampling, make_sampling
from meshrl.config.schema import RunConfig


@dataclass(frozen=True)
class EvalPlan:
    max_tokens: int
    stop: tuple[str, ...] = ()
    pass_k: int = 1
    pass_n: int = 0  # samples per prompt for pass@k; 0 = greedy only
    k_temperature: float = 1.0
    k_top_p: float = 1.0
    correct_component: str | None = None  # None = the total reward
    correct_threshold: float = 1.0
    component_names: tuple[str, ...] = ()  # the reward components a combined score reports
    batch_size: int = 16
    timeout_s: float = 600.0
    seed: int = 0
    max_prompts: int | None = None
    environment: str = ""  # the run's environment: its tasks are played as episodes ("" = single turn)
    # reward components of kind `environment`: judged by the episode's own env reward (records.py)
    environment_components: tuple[str, ...] = ()

    @classmethod
    def from_run_config(cls, cfg: RunConfig) -> "EvalPlan":
        e, s = cfg.eval, cfg.rollout.sampling
        return cls(
            max_tokens=e.max_tokens or s.max_tokens,
            stop=tuple(s.stop),
            pass_k=e.pass_k,
            pass_n=e.samples_per_prompt,
            k_temperature=e.k_temperature,
            k_top_p=e.k_top_p,
            correct_component=e.correct_component,
            correct_threshold=e.correct_threshold,
            component_names=tuple(c.name for c in cfg.reward.components),
            batch_size=e.batch_size,
            timeout_s=e.timeout_s,
            seed=cfg.run.seed,
            max_prompts=e.max_prompts,
            environment=cfg.environment.name if cfg.environment else "",
            environment_components=tuple(c.name for c in cfg.reward.components if c.kind == ENVIRONMENT_REWARD_KIND),
        )

    def greedy_sampling(self) -> common_pb2.SamplingParams:
        return greedy_sampling(self.max_tokens, self.stop).to_proto()

    def k_sampling(self, prompt_index: int) -> common_pb2.SamplingParams:
        """pass@k sampling for one prompt; the seed is never 0 (0 means unseeded)."""
        sampling = make_sampling(self.pass_n, self.k_temperature, self.k_top_p, self.max_tokens, self.stop)
        return sampling.to_proto(seed=self.seed * 1_000_003 + prompt_index + 1)
