"""The DPO path's log-prob weightings, registered by decorator so `meshrl algos` lists them.

    @register_preference_weighting("ld", config_key="algorithm.dpo_ld_alpha", paper=...)
    def ld_weighted_sums(token_logps, mask, *, alpha) -> ...

Each is switched on by its own config key (TRL's names: `ld_alpha`, `use_weighting`), not by
name: the DPO step calls the one function a key turns on.
"""

from __future__ import annotations

from typing import Callable

from meshrl.registry import Registry

PREFERENCE_WEIGHTINGS = Registry(
    "DPO log-prob weighting", decorator="register_preference_weighting", folder="meshrl.algos.preference_weighting"
)


def register_preference_weighting(name: str, *, config_key: str, paper: str = ""):
    """Decorator: register `fn` as DPO weighting `name`, turned on by `config_key`."""

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.paper, fn.config_key = name, paper, config_key
        return PREFERENCE_WEIGHTINGS.add(name, fn, config_key=config_key)

    return decorate
