"""Pieces shared by the preference losses: log-ratios, the margin h and its f-divergences.

With chosen / rejected log-ratios c = log π(y_w) − log π_ref(y_w), r = log π(y_l) − log π_ref(y_l)
the DPO margin h depends on the f-divergence that regularises the policy (Wang et al. 2023,
"Beyond Reverse KL: Generalizing Direct Preference Optimization with Diverse Divergence
Constraints", arXiv:2309.16240; TRL's `f_divergence_type`):

- `reverse_kl` (DPO): h = c − r
- `js_divergence`:    h = c − r − (softplus(c) − softplus(r))   (f(u) = log(2u / (1 + u)))
- `alpha_divergence`: h = (exp(−α·r) − exp(−α·c)) / α           (f(u) = (1 − u^−α) / α)

The exponent of the α-divergence is capped at LOG_RATIO_BOUND (TRL caps at the dtype's
largest finite log) so a far-off pair cannot overflow.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from meshrl.algos.losses.common import LOG_RATIO_BOUND

F_DIVERGENCES = ("reverse_kl", "js_divergence", "alpha_divergence")


def log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected):
    """(c, r): chosen and rejected log π − log π_ref [B]."""
    return policy_chosen - ref_chosen, policy_rejected - ref_rejected


def margin(chosen: torch.Tensor, rejected: torch.Tensor, f_divergence: str = "reverse_kl",
           f_alpha: float = 1.0) -> torch.Tensor:
    """The margin h [B] under `f_divergence` (module docstring)."""
    if f_divergence == "reverse_kl":
        return chosen - rejected
    if f_divergence == "js_divergence":
        return chosen - rejected - (F.softplus(chosen) - F.softplus(rejected))
    if f_divergence == "alpha_divergence":
        if not f_alpha > 0:
            raise ValueError(f"f_alpha must be > 0 for the alpha divergence, got {f_alpha}")
        def capped_exp(x):
            return x.clamp(max=LOG_RATIO_BOUND).exp()
        return (capped_exp(-f_alpha * rejected) - capped_exp(-f_alpha * chosen)) / f_alpha
    raise ValueError(f"f_divergence={f_divergence!r}; expected one of {', '.join(F_DIVERGENCES)}")


def check_label_smoothing(label_smoothing: float, upper: float = 1.0) -> None:
    if not 0.0 <= label_smoothing < upper:
        raise ValueError(f"label_smoothing must be in [0, {upper}), got {label_smoothing}")


def require_lengths(name: str, chosen_lengths, rejected_lengths):
    """(chosen, rejected) lengths clamped ≥ 1; a clear error when the caller gave none."""
    if chosen_lengths is None or rejected_lengths is None:
        raise ValueError(f"preference loss {name!r} averages log-probs over the response length: "
                         f"pass chosen_lengths and rejected_lengths (response token counts)")
    return chosen_lengths.clamp_min(1.0), rejected_lengths.clamp_min(1.0)
