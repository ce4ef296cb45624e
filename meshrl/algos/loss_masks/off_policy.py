"""`off_policy`: drop sequences that are both bad and far off-policy (DeepSeek-V3.2's
off-policy sequence masking, TRL's `off_policy_mask_threshold`).

With μ the policy that sampled (the engine's behaviour log-probs, or π_old without them) and
π the current policy (detached), per sequence i over its model tokens:

    D_i = mean_t (log μ(y_t) − log π(y_t)),      keep_t = A_t ≥ 0  or  D_i ≤ δ

δ = `threshold` (TRL's off_policy_mask_threshold; e.g. 0.5). A sequence with a negative
advantage the current policy already finds much less likely than its sampler did teaches
little but noise. Recomputed at every forward (π moves between mini-batches).
DeepSeek-AI 2025, "DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models",
arXiv:2512.02556, Eq. 9.
"""

from __future__ import annotations

from meshrl.algos.loss_masks.registry import register_loss_mask
from meshrl.algos.masked import masked_mean


@register_loss_mask(
    "off_policy",
    paper=(
        "DeepSeek-AI 2025, DeepSeek-V3.2: Pushing the Frontier of Open Large Language Models, "
        "arXiv:2512.02556 (TRL's off_policy_mask_threshold)"
    ),
)
def off_policy(*, logprobs, old_logprobs, behaviour_logprobs, advantages, response_mask, threshold=0.5, **_):
    """A_t ≥ 0 or mean_t(log μ − log π) ≤ δ."""
    if not threshold > 0:
        raise ValueError(f"loss_masks.off_policy.threshold must be > 0, got {threshold}")
    sampler = old_logprobs if behaviour_logprobs is None else behaviour_logprobs
    divergence = masked_mean(sampler.detach() - logprobs.detach(), response_mask, dim=-1)
    return ((advantages >= 0) | (divergence <= threshold).unsqueeze(-1)) & (response_mask > 0)
