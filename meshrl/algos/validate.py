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
    def estimator(*, rewards, response_mask, group_ids, step=None, **kwargs) -> AdvantageResult:
        values, token_rewards = kwargs.setdefault("values", None), kwargs.setdefault("token_rewards", None)
        check_estimator_inputs(name, needs_values, rewards, response_mask, group_ids, values, token_rewards, step)
        result = fn(rewards=rewards, response_mask=response_mask, group_ids=group_ids, step=step, **kwargs)
        check_finite(f"advantages from {name!r}", result.advantages, group_ids, step)
        check_finite(f"returns from {name!r}", result.returns, group_ids, step)
        return result

    return estimator


def check_estimator_inputs(name, needs_values, rewards, response_mask, group_ids, values, token_rewards, step) -> None:
    """Values present when the estimator needs a critic; shapes, group ids, the mask, finiteness."""
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


def validated_policy_loss(fn: Callable, *, name: str, level: str = "token") -> Callable:
    """Wrap a policy loss with input checks and a finiteness check on its per-token loss.

    `importance_sampling_level` (the config's) must be None or the loss's own `level`: a loss
    computes its ratio at one level, so any other request is refused, not ignored.
    """

    @functools.wraps(fn)
    def policy_loss(*, group_ids=None, step=None, importance_sampling_level=None, **tensors) -> PolicyLossResult:
        check_level(name, level, importance_sampling_level)
        check_loss_inputs(tensors, group_ids, step)
        result = fn(group_ids=group_ids, step=step, **tensors)
        check_finite(f"loss_mat from {name!r}", result.loss_mat, group_ids, step)
        return result

    return policy_loss


def check_level(name: str, level: str, requested: str | None) -> None:
    """A loss computes its importance ratio at one level: any other request is refused."""
    if requested not in (None, level):
        raise ValueError(
            f"policy loss {name!r} computes its importance ratio per {level}, not per {requested}: "
            f"remove algorithm.importance_sampling_level or choose a {requested}-level loss"
        )


def check_loss_inputs(tensors: dict, group_ids, step) -> None:
    """logprobs, old_logprobs, advantages [B, T] and response_mask (0/1) [B, T]: shapes,
    the mask, finiteness. A missing one is a TypeError naming it, as a missing keyword is."""
    names = ("logprobs", "old_logprobs", "advantages", "response_mask")
    if missing := [n for n in names if n not in tensors]:
        raise TypeError(f"policy loss missing required keyword argument(s): {', '.join(missing)}")
    logprobs, old_logprobs, advantages, response_mask = (tensors[n] for n in names)
    check_shapes(
        logprobs=(logprobs, "B T"),
        old_logprobs=(old_logprobs, "B T"),
        advantages=(advantages, "B T"),
        response_mask=(response_mask, "B T"),
        group_ids=(group_ids, "B"),
    )
    check_mask("response_mask", response_mask)
    for label in ("logprobs", "old_logprobs", "advantages"):
        check_finite(label, tensors[label], group_ids, step)
