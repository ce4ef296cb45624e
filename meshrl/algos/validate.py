"""The shared entry/exit checks that the registry decorators wrap around every part.

A registered estimator or loss only does math; shapes, dtypes, 0/1 masks and finiteness of
inputs and outputs are checked here once, so a new part gets them for free. Optional
`group_ids` and `step` keywords are used only to name the culprit in error messages.
"""

from __future__ import annotations

import functools
from typing import Callable

from meshrl.algos.checks import check_finite, check_group_ids, check_mask, check_shapes
from meshrl.algos.types import AdvantageResult, PolicyLossResult


def validated_estimator(fn: Callable, *, name: str, needs_values: bool) -> Callable:
    """Wrap an advantage estimator with input checks and a finiteness check on its result."""

    @functools.wraps(fn)
    def estimator(
        *, rewards, response_mask, group_ids, values=None, token_rewards=None, step=None, **kwargs
    ) -> AdvantageResult:
        if needs_values and values is None:
            raise ValueError(
                f"advantage estimator {name!r} needs `values` [B, T] from a critic; "
                f"enable algorithm.critic or choose an estimator without one"
            )
        check_shapes(
            rewards=(rewards, "B"),
            response_mask=(response_mask, "B T"),
            group_ids=(group_ids, "B"),
            values=(values, "B T"),
            token_rewards=(token_rewards, "B T"),
        )
        check_group_ids(group_ids)
        check_mask("response_mask", response_mask)
        for label, tensor in (("rewards", rewards), ("values", values), ("token_rewards", token_rewards)):
            check_finite(label, tensor, group_ids, step)
        result = fn(
            rewards=rewards,
            response_mask=response_mask,
            group_ids=group_ids,
            values=values,
            token_rewards=token_rewards,
            step=step,
            **kwargs,
        )
        check_finite(f"advantages from {name!r}", result.advantages, group_ids, step)
        check_finite(f"returns from {name!r}", result.returns, group_ids, step)
        return result

    return estimator


def validated_policy_loss(fn: Callable, *, name: str, level: str = "token") -> Callable:
    """Wrap a policy loss with input checks and a finiteness check on its per-token loss.

    `importance_sampling_level` (the config's) must be None or the loss's own `level`: a loss
    computes its ratio at one level, so any other request is refused, not ignored.
    """

    @functools.wraps(fn)
    def policy_loss(
        *,
        logprobs,
        old_logprobs,
        advantages,
        response_mask,
        group_ids=None,
        step=None,
        importance_sampling_level=None,
        **kwargs,
    ) -> PolicyLossResult:
        if importance_sampling_level not in (None, level):
            raise ValueError(
                f"policy loss {name!r} computes its importance ratio per {level}, "
                f"not per {importance_sampling_level}: remove "
                f"algorithm.importance_sampling_level or choose a "
                f"{importance_sampling_level}-level loss"
            )
        check_shapes(
            logprobs=(logprobs, "B T"),
            old_logprobs=(old_logprobs, "B T"),
            advantages=(advantages, "B T"),
            response_mask=(response_mask, "B T"),
            group_ids=(group_ids, "B"),
        )
        check_mask("response_mask", response_mask)
        for label, tensor in (("logprobs", logprobs), ("old_logprobs", old_logprobs), ("advantages", advantages)):
            check_finite(label, tensor, group_ids, step)
        result = fn(
            logprobs=logprobs,
            old_logprobs=old_logprobs,
            advantages=advantages,
            response_mask=response_mask,
            group_ids=group_ids,
            step=step,
            **kwargs,
        )
        check_finite(f"loss_mat from {name!r}", result.loss_mat, group_ids, step)
        return result

    return policy_loss
