"""Combine component scores into one reward per sample, keeping every component's result.

    reward = Σ_c weight_c · value_c          over components c, when all required ones are OK
    reward = NaN                             when any required component is ERROR or TIMEOUT
                                             (unless its on_failure states a value: failure_policy.py)

A component is *required* when its weight is non-zero; a zero-weight component is a
diagnostic (e.g. accuracy logged beside a shaped reward) and its failure does not touch
the reward. Every component — value, weight, status, error text, latency — is written to
`Sample.reward_components`, and a failed component's value is NaN too (or its on_failure
value, with the failed status kept).

What the learner must do: treat a NaN `Sample.reward` as "no score" (drop the sample's
group, or mask the sample), never as 0; `reward_components[*].status` says which
component failed and `error` why. `failed_components(sample)` lists them.
"""

import math

import numpy as np

from meshrl.api.common.v1 import common_pb2
from meshrl.services.reward.types import ComponentScore


def combine(rows: list[list[ComponentScore]]) -> np.ndarray:
    """rows[i] = sample i's component scores (same components, same order) → rewards [n]."""
    if not rows or not rows[0]:
        return np.full(len(rows), np.nan)
    # A failed score is NaN unless its on_failure policy gave it a value (failure_policy.py).
    values = np.array(
        [[c.score.value if c.score.ok or math.isfinite(c.score.value) else np.nan for c in row] for row in rows]
    )
    weights = np.array([c.weight for c in rows[0]])
    usable = np.isfinite(values)
    required = weights != 0.0
    all_required_ok = (usable | ~required).all(axis=1)
    weighted = np.where(required, np.nan_to_num(values) * weights, 0.0).sum(axis=1)
    return np.where(all_required_ok, weighted, np.nan)


def to_proto(c: ComponentScore) -> common_pb2.RewardComponent:
    return common_pb2.RewardComponent(
        name=c.name,
        value=c.score.value if c.score.ok or math.isfinite(c.score.value) else math.nan,
        weight=c.weight,
        status=int(c.score.status),
        error=c.score.error,
        latency_s=c.latency_s,
    )


def fill_samples(samples, rows: list[list[ComponentScore]]) -> None:
    """Write rewards and components into `common_pb2.Sample`s, in place (replacing old ones)."""
    for sample, row, reward in zip(samples, rows, combine(rows).tolist(), strict=True):
        del sample.reward_components[:]
        sample.reward_components.extend(to_proto(c) for c in row)
        sample.reward = reward


def failed_components(sample: common_pb2.Sample) -> list[str]:
    """Names and errors of the sample's components that did not score OK."""
    return [
        f"{c.name}: {common_pb2.ScoreStatus.Name(c.status)} {c.error}".strip()
        for c in sample.reward_components
        if c.status != common_pb2.SCORE_STATUS_OK
    ]
