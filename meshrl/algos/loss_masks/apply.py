"""Run the configured loss masks on a micro-batch: (policy-gradient mask, entropy mask)."""

from __future__ import annotations

from collections.abc import Mapping

from meshrl.algos.loss_masks.registry import LOSS_MASKS


def apply_loss_masks(configured: Mapping[str, Mapping[str, object]], **inputs):
    """(mask for the policy-gradient term, mask for the entropy bonus, {name: kept fraction}),
    0/1 floats [B, T] (None, None, {} when nothing is configured); `inputs` as the registry
    docstring lists."""
    mask = inputs["response_mask"]
    pg = entropy = None
    kept = {}
    for name, options in configured.items():
        fn = LOSS_MASKS.get(name)
        keep = fn(**inputs, **options).to(mask.dtype)
        kept[name] = (keep * mask).sum() / mask.sum().clamp_min(1.0)
        pg = keep if pg is None else pg * keep
        if fn.also_entropy:
            entropy = keep if entropy is None else entropy * keep
    return pg, entropy, kept
