"""Advantage estimators, one file per family; importing this package registers them all.

Every estimator has the signature

    fn(*, rewards [B], response_mask [B, T], group_ids [B] int64, values=None [B, T],
       token_rewards=None [B, T], gamma=1.0, lam=1.0, norm_by_std=True, eps=1e-6,
       scale_rewards="group", normalize_advantages=False, **_)
      -> AdvantageResult(advantages [B, T], returns [B, T])

(estimators that need more — `gdpo`'s reward_components, `remax`'s greedy_rewards,
`optimal_token_baseline`'s old_logprobs and sum_pi_squared — take them as keywords too) and
is looked up by name with `meshrl.algos.get_advantage_estimator`.
"""

from meshrl.algos.registry import import_folder

import_folder(__name__, __path__)  # every file's decorators register its estimators
