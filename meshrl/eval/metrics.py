"""Evaluation metrics from judged samples (see correct.py for what "correct" means).

Greedy (one sample per prompt, temperature 0):
    eval/n                       prompts evaluated
    eval/accuracy                fraction of prompts whose greedy answer is correct
    eval/accuracy/<data_source>  the same per data source, when the split has several
    eval/reward_mean             mean total reward (samples whose score failed left out)
    eval/response_length_mean    mean response length in tokens
    eval/clipped_ratio           fraction that hit max_tokens
Sampled (only with eval.pass_k > 1; n = eval.pass_n samples per prompt):
    eval/pass@K                  unbiased pass@k (Chen et al. 2021; passk.py)
    eval/sampled_accuracy        mean fraction correct per prompt (= pass@1 at k_temperature)
    eval/sampled_reward_mean
Both:
    eval/score_errors            samples the rule could not judge (their score failed)
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from meshrl.eval.passk import mean_pass_at_k
from meshrl.eval.records import EvalSample


def finite_mean(values: list[float]) -> float | None:
    kept = [v for v in values if math.isfinite(v)]
    return float(np.mean(kept)) if kept else None


def greedy_metrics(greedy: list[EvalSample]) -> dict[str, float]:
    if not greedy:
        return {"eval/n": 0.0}
    out = {
        "eval/n": float(len(greedy)),
        "eval/accuracy": float(np.mean([s.correct for s in greedy])),
        "eval/response_length_mean": float(np.mean([s.num_tokens for s in greedy])),
        "eval/clipped_ratio": float(np.mean([s.finish_reason == "length" for s in greedy])),
    }
    if (reward := finite_mean([s.reward for s in greedy])) is not None:
        out["eval/reward_mean"] = reward
    by_source = defaultdict(list)
    for s in greedy:
        by_source[s.data_source or "unknown"].append(s.correct)
    if len(by_source) > 1:
        out.update({f"eval/accuracy/{k}": float(np.mean(v)) for k, v in sorted(by_source.items())})
    return out


def sampled_metrics(sampled: list[EvalSample], k: int) -> dict[str, float]:
    if not sampled:
        return {}
    per_prompt = defaultdict(list)
    for s in sampled:
        per_prompt[s.prompt_index].append(s.correct)
    counts = [(len(v), sum(v)) for _, v in sorted(per_prompt.items())]
    out = {
        f"eval/pass@{k}": mean_pass_at_k(counts, k),
        "eval/sampled_accuracy": float(np.mean([c / n for n, c in counts])),
    }
    if (reward := finite_mean([s.reward for s in sampled])) is not None:
        out["eval/sampled_reward_mean"] = reward
    return out


def summarize(samples: list[EvalSample], *, k: int, score_errors: int) -> dict[str, float]:
    greedy = [s for s in samples if s.mode == "greedy"]
    sampled = [s for s in samples if s.mode == "sampled"]
    return {**greedy_metrics(greedy), **sampled_metrics(sampled, k), "eval/score_errors": float(score_errors)}
