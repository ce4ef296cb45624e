"""The offline DPO path's loss: one registered preference loss, or a weighted sum of several.

Inputs are per-sequence *summed* response log-probs [B] of the policy and the frozen
reference (and, for the length-averaged losses `ipo` / `sigmoid_norm`, the response token
counts). The preference losses themselves live in `meshrl.algos.preference`, one file per
family, registered with `@register_preference_loss` (TRL's `loss_type` names and formulas);
`kind` is one name or a list, `weights` their weights (TRL's `loss_weights`, default 1 each):

    L = W · Σ_k w_k · L_k(policy, reference)

W: per-pair weights when given (WPO's, `meshrl.algos.preference_weighting.wpo`), else 1. An
`f_divergence` other than reverse KL must be taken by every chosen loss that reads the
reference (TRL refuses the others too); `sft` reads none.

Metrics (TRL's names, batch means, detached), with the implicit reward β·(log π − log π_ref):
`rewards/chosen`, `rewards/rejected`, `rewards/margins` (chosen − rejected),
`rewards/accuracies` (fraction with chosen > rejected).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from meshrl.algos import preference as _preference  # noqa: F401  (registers the losses)
from meshrl.algos.checks import check_finite, check_shapes
from meshrl.algos.options import check_options, part_options
from meshrl.algos.registry import PREFERENCE_LOSSES, get_preference_loss


def list_dpo_kinds() -> list[str]:
    return PREFERENCE_LOSSES.names()


def loss_terms(kind: str | Sequence[str], weights: Sequence[float] | None):
    """[(loss fn, weight)] for one name or a list; clear errors for a bad list."""
    names = [kind] if isinstance(kind, str) else list(kind)
    if not names:
        raise ValueError("algorithm.dpo_loss_type is an empty list; name at least one preference loss")
    weights = [1.0] * len(names) if weights is None else list(weights)
    if len(weights) != len(names):
        raise ValueError(
            f"algorithm.dpo_loss_weights has {len(weights)} weights for "
            f"{len(names)} losses ({', '.join(names)}); give one weight per loss"
        )
    return [(get_preference_loss(n), float(w)) for n, w in zip(names, weights)]


def dpo_loss(
    policy_chosen: torch.Tensor,
    policy_rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float = 0.1,
    kind: str | Sequence[str] = "sigmoid",
    label_smoothing: float = 0.0,
    *,
    weights: Sequence[float] | None = None,
    chosen_lengths: torch.Tensor | None = None,
    rejected_lengths: torch.Tensor | None = None,
    state: dict | None = None,
    options: Mapping[str, object] | None = None,
    policy_chosen_full: torch.Tensor | None = None,
    pair_weights: torch.Tensor | None = None,
):
    """Per-pair loss [B] and metrics for preference pairs (module docstring): `(loss [B], metrics)`.

    `options` go to every loss that takes them (`discopop_tau`, `f_divergence`, ...), refused if none does.
    `policy_chosen_full`: the chosen sums before LD-DPO's weighting (for `sft`); `pair_weights` [B]: W.
    """
    terms, options = checked_terms(beta, kind, weights, label_smoothing, options)
    inputs = checked_inputs(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths, rejected_lengths)
    state = {} if state is None else state  # one dict for every term: a loss may keep running values in it
    loss = sum(
        w * fn(**inputs, beta=beta, state=state, policy_chosen_full=policy_chosen_full, **options) for fn, w in terms
    )
    loss = weighted_per_pair(loss, pair_weights, terms)
    return loss, implicit_reward_metrics(beta, policy_chosen, policy_rejected, ref_chosen, ref_rejected)


def checked_terms(beta: float, kind, weights, label_smoothing: float, options: Mapping[str, object] | None):
    """The weighted losses and the options they share, refused early when they cannot fit together."""
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    terms = loss_terms(kind, weights)
    options = {**({"label_smoothing": label_smoothing} if label_smoothing else {}), **(options or {})}
    check_options("algorithm.loss_options", options, [fn for fn, _ in terms])
    check_f_divergence(options.get("f_divergence", "reverse_kl"), [fn for fn, _ in terms])
    return terms, options


def checked_inputs(policy_chosen, policy_rejected, ref_chosen, ref_rejected, chosen_lengths, rejected_lengths):
    """What every loss reads, all [B]: the four sums finite, the reference's detached (it is frozen)."""
    sums = dict(
        policy_chosen=policy_chosen,
        policy_rejected=policy_rejected,
        ref_chosen=ref_chosen.detach(),
        ref_rejected=ref_rejected.detach(),
    )
    check_shapes(
        **{k: (v, "B") for k, v in sums.items()},
        chosen_lengths=(chosen_lengths, "B"),
        rejected_lengths=(rejected_lengths, "B"),
    )
    for name, tensor in sums.items():
        check_finite(name, tensor)
    return {**sums, "chosen_lengths": chosen_lengths, "rejected_lengths": rejected_lengths}


def weighted_per_pair(loss: torch.Tensor, pair_weights: torch.Tensor | None, terms) -> torch.Tensor:
    """W · L (W = 1 when not given); refused after a loss whose rows are sorted, not pairs."""
    if pair_weights is None:
        return loss
    unpaired = [fn.registered_name for fn, _ in terms if not getattr(fn, "per_pair", True)]
    if unpaired:
        raise ValueError(
            f"pair weights (algorithm.dpo_use_weighting) cannot follow {unpaired[0]}, "
            f"whose rows are sorted, not pairs; remove one"
        )
    return loss * pair_weights.detach()


def check_f_divergence(f_divergence: str, losses) -> None:
    """ValueError naming the losses that read the reference but would ignore `f_divergence`."""
    if f_divergence == "reverse_kl":
        return
    ignoring = [
        fn.registered_name
        for fn in losses
        if getattr(fn, "uses_reference", True) and "f_divergence" not in part_options(fn)
    ]
    if ignoring:
        raise ValueError(
            f"algorithm.loss_options f_divergence={f_divergence!r}: {', '.join(ignoring)} "
            f"has no f-divergence form and would ignore it; use reverse_kl with it, or "
            f"losses built on the margin ({', '.join(f_divergence_losses())})"
        )


def f_divergence_losses() -> list[str]:
    return [n for n in PREFERENCE_LOSSES.names() if "f_divergence" in part_options(PREFERENCE_LOSSES.get(n))]


def implicit_reward_metrics(beta: float, policy_chosen, policy_rejected, ref_chosen, ref_rejected) -> dict:
    """TRL's reward metrics from the implicit reward β·(log π − log π_ref), batch means, detached."""
    chosen = beta * (policy_chosen - ref_chosen).detach()
    rejected = beta * (policy_rejected - ref_rejected).detach()
    return {
        "rewards/chosen": chosen.mean(),
        "rewards/rejected": rejected.mean(),
        "rewards/margins": (chosen - rejected).mean(),
        "rewards/accuracies": (chosen > rejected).to(chosen.dtype).mean(),
    }
