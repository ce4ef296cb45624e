"""Loss masks: token filters that zero part of the policy-gradient term (TRL's entropy mask
and off-policy sequence mask), registered by decorator.

    @register_loss_mask("top_entropy", also_entropy=True)
    def top_entropy(*, entropy, response_mask, quantile=1.0, **_) -> keep [B, T] bool

Every mask gets the same inputs (take what you need, `**_` the rest): `logprobs` (the
current policy's, detached), `old_logprobs`, `behaviour_logprobs` (the engine's, or None),
`advantages`, `entropy`, `response_mask` (the loss mask: model tokens); its keyword options
come from `algorithm.loss_masks.<name>`. The loop multiplies the per-token policy loss by
every configured mask (the KL term is not masked, as TRL); `also_entropy=True` restricts the
entropy bonus (and the adaptive entropy controller's measurement) to the kept tokens, as
TRL does with its entropy mask. The config reads what they declare from the parts table.
"""

from __future__ import annotations

from typing import Callable

from meshrl.algos.options import declared_options
from meshrl.registry import Registry

LOSS_MASKS = Registry("loss mask", decorator="register_loss_mask", folder="meshrl.algos.loss_masks")


def register_loss_mask(name: str, *, also_entropy: bool = False, paper: str = ""):
    """Decorator: register `fn` as loss mask `name` (module docstring)."""

    def decorate(fn: Callable) -> Callable:
        fn.registered_name, fn.also_entropy, fn.paper = name, also_entropy, paper
        return LOSS_MASKS.add(name, fn, also_entropy=also_entropy, options=declared_options(fn))

    return decorate
