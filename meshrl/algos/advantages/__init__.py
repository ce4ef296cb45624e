"""Advantage estimators, one file per family; importing this package registers them all.

Every estimator has the signature

    fn(*, rewards [B], response_mask [B, T], group_ids [B] int64, values=None [B, T],
       token_rewards=None [B, T], gamma=1.0, lam=1.0, norm_by_std=True, eps=1e-6,
       scale_rewards="group", normalize_advantages=False, **_)
      -> AdvantageResult(advantages [B, T], returns [B, T])

and is looked up by name with `meshrl.algos.get_advantage_estimator`.
"""
from meshrl.algos.advantages import (gae, gpg, grpo, grpo_passk, none, opo,  # noqa: F401
                                      reinforce, rloo)  # (registers)
