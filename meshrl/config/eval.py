"""Held-out evaluation and sample logging, as typed config (`RunConfig.eval`). Never imports torch.

    data:
      eval: data/eval.jsonl          # the held-out split (same row format as data.train)
    eval:
      every: 10                      # learner steps between evaluations; 0 = off
      pass_k: 4                      # also sample pass_n per prompt at k_temperature → pass@4
      correct_component: math        # what "correct" means (below); null = the total reward
      samples_per_step: 4            # rows per step appended to RUN_DIR/samples.jsonl

Every eval prompt is answered greedily (temperature 0, one sample): `eval/accuracy`,
`eval/reward_mean`, `eval/response_length_mean`. With `pass_k > 1` each prompt is also
sampled `pass_n` times (default `pass_k`) at `k_temperature`, giving `eval/pass@K`.

A sample is correct when the value of `correct_component` (that component's raw value,
before its weight) is at least `correct_threshold`; with `correct_component: null` the total
reward (the weighted sum the learner trains on) is compared instead. A sample whose score
failed (status ERROR/TIMEOUT, or the component missing) is incorrect and counted in
`eval/score_errors`.

`meshrl eval CHECKPOINT_OR_EXPORT DATA` reads the same section (from the run's saved config).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field, model_validator

from meshrl.config.algorithm import Strict

if TYPE_CHECKING:
    from meshrl.config.schema import RunConfig


class EvalConfig(Strict):
    every: int = Field(0, ge=0)  # learner steps between evaluations (and after the last); 0 = off
    at_start: bool = False  # also evaluate the base model before the first step
    max_prompts: int | None = Field(None, ge=1)  # the first N rows of data.eval; None = all
    pass_k: int = Field(1, ge=1)  # > 1: also sample pass_n per prompt and report pass@k
    pass_n: int | None = Field(None, ge=1)  # samples per prompt for pass@k; None = pass_k
    k_temperature: float = Field(1.0, gt=0.0)
    k_top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1)  # None = rollout.sampling.max_tokens
    correct_component: str | None = None  # None = the total reward
    correct_threshold: float = 1.0
    samples_per_step: int = Field(4, ge=0)  # rows per step to RUN_DIR/samples.jsonl; 0 = none
    batch_size: int = Field(16, ge=1)  # prompts per RolloutService.Generate call
    timeout_s: float = Field(600.0, gt=0.0)  # deadline of one Generate or Score call
    wait_for_version_s: float = Field(300.0, gt=0.0)  # for rollout to load the weights to evaluate
    # The evaluation has the rollout to itself: the next training prompts wait until it ends, so
    # it runs at full speed and a run's clock minus its evaluations is the run without them
    # (benchmarks/time_to_accuracy.py); off, training generation goes on beside it.
    exclusive: bool = False

    @property
    def samples_per_prompt(self) -> int:
        """n of the pass@k estimator (0 when pass@k is not asked for)."""
        return 0 if self.pass_k == 1 else (self.pass_n or self.pass_k)

    @model_validator(mode="after")
    def _n_covers_k(self) -> "EvalConfig":
        if self.pass_n is not None and self.pass_n < self.pass_k:
            raise ValueError(
                f"eval.pass_n={self.pass_n} is below eval.pass_k={self.pass_k}: "
                f"pass@k needs at least k samples per prompt"
            )
        return self


def eval_problems(cfg: "RunConfig") -> list[str]:
    """Keys of other sections that `eval` must agree with, each problem naming them."""
    problems = []
    asked = f"eval.every={cfg.eval.every}" if cfg.eval.every else "eval.at_start=true"
    if (cfg.eval.every or cfg.eval.at_start) and not cfg.data.eval:
        problems.append(f"{asked} needs data.eval: name the held-out .jsonl or .parquet file (or set eval.every=0)")
    if (cfg.eval.every or cfg.eval.at_start) and cfg.algorithm.offline:
        problems.append(
            f"{asked} with an offline algorithm (algorithm.offline=true): offline "
            f"runs start no rollout to evaluate with; set eval.every=0 and use "
            f"`meshrl eval CHECKPOINT DATA`"
        )
    names = [c.name for c in cfg.reward.components]
    if cfg.eval.correct_component is not None and cfg.eval.correct_component not in names:
        problems.append(
            f"eval.correct_component={cfg.eval.correct_component!r} is not a reward "
            f"component; reward.components are {names} (or null = the total reward)"
        )
    return problems
