"""`nca_pair`: Noise Contrastive Alignment on pairs.

With implicit rewards r_w = β·c, r_l = β·r (c, r: chosen / rejected log-ratios):

    L = −log σ(r_w) − ½·log σ(−r_w) − ½·log σ(−r_l)

Unlike DPO it optimises absolute likelihoods, not only their difference, so the chosen
response's likelihood does not fall along with the rejected one's.
"""

from __future__ import annotations

import torch.nn.functional as F

from meshrl.algos.preference.common import log_ratios
from meshrl.algos.registry import register_preference_loss


@register_preference_loss(
    "nca_pair",
    paper=("Chen et al. 2024, Noise Contrastive Alignment of Language Models with Explicit Rewards, arXiv:2402.05369"),
)
def nca_pair(*, policy_chosen, policy_rejected, ref_chosen, ref_rejected, beta, **_):
    """−log σ(βc) − ½ log σ(−βc) − ½ log σ(−βr) (module docstring)."""
    chosen, rejected = log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected)
    reward_w, reward_l = beta * chosen, beta * rejected
    return -F.logsigmoid(reward_w) - 0.5 * F.logsigmoid(-reward_w) - 0.5 * F.logsigmoid(-reward_l)
