"""Reweighting methods for PF-PPO's resampling, registered by decorator.

    @register_reweighting("pow")
    def pow_weights(scores, *, weight_pow=2.0, **_) -> weights [B] ≥ 0

`scores` [B] are the sequences' rewards; the weights are the (unnormalised) probabilities
each row is drawn with (`pf_ppo.py`). The config reads their names from the parts table.
"""

from __future__ import annotations

from typing import Callable

from meshrl.algos.options import declared_options
from meshrl.registry import Registry

REWEIGHTINGS = Registry("PF-PPO reweighting", decorator="register_reweighting", folder="meshrl.algos.resampling")


def register_reweighting(name: str, *, paper: str = ""):
    """Decorator: register `fn` as PF-PPO reweighting method `name` (module docstring)."""

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.paper = name, paper
        return REWEIGHTINGS.add(name, fn, options=declared_options(fn))

    return decorate
