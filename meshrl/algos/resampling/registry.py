"""Reweighting methods for PF-PPO's resampling, registered by decorator.

    @register_reweighting("pow")
    def pow_weights(scores, *, weight_pow=2.0, **_) -> weights [B] ≥ 0

`scores` [B] are the sequences' rewards; the weights are the (unnormalised) probabilities
each row is drawn with (`pf_ppo.py`). The config reads these decorators from this folder.
"""

from __future__ import annotations

from typing import Callable

from meshrl.algos.registry import Registry

REWEIGHTINGS = Registry("PF-PPO reweighting", "register_reweighting")


def register_reweighting(name: str, *, paper: str = ""):
    """Decorator: register `fn` as PF-PPO reweighting method `name` (module docstring)."""

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.paper = name, paper
        return REWEIGHTINGS.add(name, fn)

    return decorate


REWEIGHTINGS.register = register_reweighting
