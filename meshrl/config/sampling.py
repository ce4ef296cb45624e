"""One source of sampling parameters: what the rollout engine samples with, and the
temperature every log-prob of those samples is taken at (learner policy and reference).

The rule at T = 0 (`rollout.sampling.temperature: 0`):
- generation is greedy (argmax; vLLM ignores top_p there, so it is sent as 1);
- log-probs are taken at temperature 1, i.e. `log_softmax(logits)`. That is what the engine
  reports as behaviour log-probs for a greedy request (vLLM's `processed_logprobs` are taken
  before temperature scaling when every request of the batch is greedy), so the learner's
  importance ratio and the KL to the reference compare like with like.
At T > 0 generation samples from `softmax(logits / T)` and log-probs are taken at T too.
Offline runs (DPO) sample nothing: their log-probs are the model's own, at temperature 1.

Evaluation answers greedily with the same rule (`greedy_sampling`). Never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshrl.config.schema import RunConfig


@dataclass(frozen=True)
class Sampling:
    """What one generation request asks the engine for."""

    n: int
    temperature: float
    top_p: float
    max_tokens: int
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @property
    def logprob_temperature(self) -> float:
        """The temperature the sampled tokens' log-probs are taken at (module docstring)."""
        return 1.0 if self.greedy else self.temperature

    def to_proto(self, seed: int = 0):
        """`meshrl.common.v1.SamplingParams` (seed 0 = unseeded)."""
        from meshrl.api.common.v1 import common_pb2  # lazy: protobuf descriptors (~13 ms); loading a config needs none

        return common_pb2.SamplingParams(
            n=self.n,
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            stop=list(self.stop),
            seed=seed,
        )


def make_sampling(n: int, temperature: float, top_p: float, max_tokens: int, stop=()) -> Sampling:
    """A `Sampling`; greedy requests carry top_p 1 (argmax ignores the nucleus)."""
    return Sampling(
        n=n,
        temperature=temperature,
        top_p=1.0 if temperature == 0.0 else top_p,
        max_tokens=max_tokens,
        stop=tuple(stop),
    )


def rollout_sampling(cfg: "RunConfig") -> Sampling:
    """The group sampling of training: `rollout.sampling`, one request per prompt."""
    s = cfg.rollout.sampling
    return make_sampling(s.group_size, s.temperature, s.top_p, s.max_tokens, s.stop)


def greedy_sampling(max_tokens: int, stop=()) -> Sampling:
    """One greedy answer per prompt (evaluation)."""
    return make_sampling(1, 0.0, 1.0, max_tokens, stop)


def logprob_temperature(cfg: "RunConfig") -> float:
    """The temperature the learner and the reference take log-probs at (module docstring)."""
    if cfg.algorithm.offline:
        return 1.0
    return rollout_sampling(cfg).logprob_temperature


def sampling_problems(cfg: "RunConfig") -> list[str]:
    """Sampling settings that would train nothing, each naming the keys and the fix."""
    s = cfg.rollout.sampling
    if cfg.algorithm.offline:
        return []
    problems = context_problems(cfg)
    if s.temperature == 0.0 and s.group_size != 1:
        problems.append(
            f"rollout.sampling.temperature=0 samples greedily, so the "
            f"rollout.sampling.group_size={s.group_size} samples of a prompt are identical and "
            f"their group-relative advantages are 0; set temperature > 0 (e.g. 1.0) or "
            f"group_size=1"
        )
    return problems


def context_problems(cfg: "RunConfig") -> list[str]:
    """An answer of max_tokens must leave room for a prompt in the engine's context
    (rollout.max_model_len): else every request is refused mid-run. The model's own context is
    checked at start, where its config.json is read (meshrl.launch.inputs); a prompt longer
    than what is left is dropped with the reason prompt_too_long."""
    limit = cfg.rollout.max_model_len
    asked = [("rollout.sampling.max_tokens", cfg.rollout.sampling.max_tokens)]
    if cfg.eval.max_tokens is not None:
        asked.append(("eval.max_tokens", cfg.eval.max_tokens))
    return [
        f"{key}={tokens} leaves no room for a prompt in rollout.max_model_len={limit} (the "
        f"engine's context holds prompt + answer); lower {key} or raise rollout.max_model_len"
        for key, tokens in asked
        if tokens >= limit
    ]
