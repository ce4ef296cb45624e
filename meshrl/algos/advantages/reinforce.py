"""`reinforce_plus_plus` and `reinforce_plus_plus_baseline` (Hu 2025, "REINFORCE++").

`reinforce_plus_plus` — no critic, no groups:

    r_t = token_rewards_t + [t = last valid token]·rewards   (e.g. a per-token KL penalty)
    G_t = Σ_{k≥t} γ^{k−t} r_k                                (discounted return)
    A   = (G − mean(G)) / sqrt(var(G) + eps)                 over all valid tokens of the batch

`returns` = G. If every valid G is equal, A is exactly 0.

`reinforce_plus_plus_baseline` — group baseline, then batch whitening:

    s_i = rewards_i + Σ_t token_rewards_it,   Ã_i = s_i − mean_g(s)   on every valid token
    A   = whiten(Ã) over all valid tokens of the batch

Groups whose scores are all equal keep exactly 0 after whitening (they carry no signal;
the paper's whitening would shift them by the batch mean). `returns` = A, as in verl.
"""

from __future__ import annotations

import torch

from meshrl.algos.advantages.common import discounted_returns, outcome_scores, per_token_rewards
from meshrl.algos.groups import group_stats
from meshrl.algos.masked import broadcast_over_tokens, masked_whiten
from meshrl.algos.registry import register_advantage_estimator
from meshrl.algos.types import AdvantageResult

REINFORCE_PP = (
    "Hu 2025, REINFORCE++: A Simple and Efficient Approach for Aligning Large Language Models, arXiv:2501.03262"
)


@register_advantage_estimator("reinforce_plus_plus", paper=REINFORCE_PP)
def reinforce_plus_plus(
    *, rewards, response_mask, group_ids, token_rewards=None, gamma=1.0, eps=1e-6, **_
) -> AdvantageResult:
    """Batch-whitened discounted returns (module docstring)."""
    step_rewards = per_token_rewards(rewards, token_rewards, response_mask)
    returns = discounted_returns(step_rewards, response_mask, gamma)
    return AdvantageResult(advantages=masked_whiten(returns, response_mask, eps), returns=returns)


@register_advantage_estimator("reinforce_plus_plus_baseline", paper=REINFORCE_PP)
def reinforce_plus_plus_baseline(
    *, rewards, response_mask, group_ids, token_rewards=None, eps=1e-6, **_
) -> AdvantageResult:
    """Group-mean baseline, then batch whitening; no-signal groups stay 0 (module docstring)."""
    scores = outcome_scores(rewards, token_rewards, response_mask)
    stats = group_stats(scores, group_ids)
    centred = torch.where(stats.all_equal, torch.zeros_like(scores), scores - stats.mean)
    whitened = masked_whiten(broadcast_over_tokens(centred, response_mask), response_mask, eps)
    keep = (~stats.all_equal).to(whitened.dtype).unsqueeze(-1)
    advantages = whitened * keep
    return AdvantageResult(advantages=advantages, returns=advantages.clone())
