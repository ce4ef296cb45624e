"""The two registries of rollout correction: how to weight, and what to reject.

    @register_rollout_weights("icepop", level="token")
    def icepop(log_ratio, mask, *, cap, lower=None, **_) -> (weights, truncated, masked)

    @register_rejection("seq_mean_k3", level="sequence")
    def seq_mean_k3(log_ratio, mask) -> statistic [B] (sequence) or [B, T] (token)

`log_ratio` = log π_old − log μ per token (μ: the rollout engine's behaviour log-probs),
`mask` the loss mask (the model's tokens). A weights mode returns the weights before padding
is zeroed and which tokens it truncated / zeroed; `level` says whether its weight is one per
token or one per sequence (batch normalisation averages over tokens or over sequences). A
rejection criterion returns the divergence statistic it thresholds; `two_sided=True` marks
the k1 statistics, kept between log(lower) and log(upper) (the others: at most upper).

The config reads what they declare from the parts table (meshrl.config.parts), so
`algorithm.rollout_correction.mode` and `.reject` learn a new name from its file alone.
"""

from __future__ import annotations

from typing import Callable

from meshrl.algos.options import declared_options
from meshrl.registry import Registry

LEVELS = ("token", "sequence")
FOLDER = "meshrl.algos.correction"
ROLLOUT_WEIGHTS = Registry("rollout-correction mode", decorator="register_rollout_weights", folder=FOLDER)
REJECTIONS = Registry("rejection criterion", decorator="register_rejection", folder=FOLDER)


def check_level(kind: str, name: str, level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level={level!r} for {kind} {name!r}; expected token or sequence")


def register_rollout_weights(name: str, *, level: str = "token", paper: str = ""):
    """Decorator: register `fn` as rollout-correction mode `name` (module docstring)."""
    check_level("rollout-correction mode", name, level)

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.level, fn.paper = name, level, paper
        return ROLLOUT_WEIGHTS.add(name, fn, level=level, options=declared_options(fn))

    return decorate


def register_rejection(name: str, *, level: str = "token", two_sided: bool = False, paper: str = ""):
    """Decorator: register `fn` as rejection criterion `name` (module docstring)."""
    check_level("rejection criterion", name, level)

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.level, fn.two_sided, fn.paper = name, level, two_sided, paper
        return REJECTIONS.add(name, fn, level=level, two_sided=two_sided)

    return decorate
