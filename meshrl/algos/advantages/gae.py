"""`gae`: Generalised Advantage Estimation for PPO with a critic.

Schulman et al. 2016, "High-Dimensional Continuous Control Using Generalized Advantage
Estimation"; the RLHF form of Ouyang et al. 2022 (reward at the last token, optional
per-token KL penalty in `token_rewards`):

    r_t     = token_rewards_t + [t = last valid token]·rewards
    δ_t     = r_t + γ·V_{t+1} − V_t            (V after the last valid token = 0)
    A_t     = δ_t + γ·λ·A_{t+1}
    returns = A + V                             (the critic's regression target)

Masked tokens inside a response (e.g. tool output) are skipped: they carry A and V_{t+1}
through unchanged. Advantages are then whitened over valid tokens (`whiten_advantages`,
default on, as in verl/TRL/OpenRLHF); returns use the raw advantages.
"""

from __future__ import annotations

from meshrl.algos.advantages.common import gae_scan, per_token_rewards
from meshrl.algos.masked import masked_whiten
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult


@register_advantage_estimator(
    "gae",
    needs_values=True,
    paper=(
        "Schulman et al. 2016, High-Dimensional Continuous Control Using Generalized Advantage "
        "Estimation, arXiv:1506.02438"
    ),
)
def gae(
    *,
    rewards,
    response_mask,
    group_ids,
    values,
    token_rewards=None,
    gamma=1.0,
    lam=1.0,
    eps=1e-6,
    whiten_advantages=True,
    **_,
) -> AdvantageResult:
    """GAE(γ, λ) advantages and returns = A + V; see the module docstring."""
    values = values.detach()
    step_rewards = per_token_rewards(rewards, token_rewards, response_mask)
    raw = gae_scan(step_rewards, values, response_mask, gamma, lam)
    returns = (raw + values) * response_mask
    advantages = masked_whiten(raw, response_mask, eps) if whiten_advantages else raw
    return AdvantageResult(advantages=advantages, returns=returns)
