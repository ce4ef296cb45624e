"""Pieces shared by the preference losses: log-ratios, the f-divergence scores and the margin h.

With chosen / rejected log-ratios c = log π(y_w) − log π_ref(y_w), r = log π(y_l) − log π_ref(y_l),
the f-divergence that regularises the policy (Wang et al. 2023, "Beyond Reverse KL:
Generalizing Direct Preference Optimization with Diverse Divergence Constraints",
arXiv:2309.16240) turns each side's log-ratio x into its score f'(e^x), and the margin is
h = f'(e^c) − f'(e^r) (TRL 1.16.0's `f_divergence_type`, same formulas):

- `reverse_kl` (DPO): f'(u) = log u + 1          score x
- `forward_kl`:       f'(u) = −1/u               score 1 − e^−x   (the constant cancels in h)
- `js_divergence`:    f'(u) = log(2u / (1 + u))  score log 2 + log σ(x)
- `alpha_divergence`: f'(u) = (1 − u^−α) / α     score (1 − e^−αx) / α   (α = `f_alpha` ∈ (0, 1)
  in the paper; → reverse KL as α → 0)

TRL 1.16's `f_alpha_divergence_coef` a is the paper's α written as 1 − a (its score is
(e^((a−1)x) − 1)/(a − 1)): both defaults are 0.5, where the two agree; TRL's a = 0.3 is
meshrl's f_alpha = 0.7. The exponent is capped at LOG_RATIO_BOUND (TRL caps at 80 in fp32)
so a far-off pair cannot overflow.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from meshrl.algos.losses.common import LOG_RATIO_BOUND

F_DIVERGENCES = ("reverse_kl", "forward_kl", "js_divergence", "alpha_divergence")
DEFAULT_F_ALPHA = 0.5


def log_ratios(policy_chosen, policy_rejected, ref_chosen, ref_rejected):
    """(c, r): chosen and rejected log π − log π_ref [B]."""
    return policy_chosen - ref_chosen, policy_rejected - ref_rejected


def _capped_exp(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(max=LOG_RATIO_BOUND).exp()


def score(log_ratio: torch.Tensor, f_divergence: str = "reverse_kl", f_alpha: float = DEFAULT_F_ALPHA) -> torch.Tensor:
    """f'(e^x) for each side's log-ratio x [B], up to a constant (module docstring)."""
    if f_divergence == "reverse_kl":
        return log_ratio
    if f_divergence == "forward_kl":
        return 1.0 - _capped_exp(-log_ratio)
    if f_divergence == "js_divergence":
        return math.log(2.0) + F.logsigmoid(log_ratio)
    if f_divergence == "alpha_divergence":
        if not f_alpha > 0:
            raise ValueError(f"f_alpha must be > 0 for the alpha divergence, got {f_alpha}")
        return (1.0 - _capped_exp(-f_alpha * log_ratio)) / f_alpha
    raise ValueError(f"f_divergence={f_divergence!r}; expected one of {', '.join(F_DIVERGENCES)}")


def margin(
    chosen: torch.Tensor, rejected: torch.Tensor, f_divergence: str = "reverse_kl", f_alpha: float = DEFAULT_F_ALPHA
) -> torch.Tensor:
    """The margin h = score(c) − score(r) [B] under `f_divergence` (module docstring)."""
    return score(chosen, f_divergence, f_alpha) - score(rejected, f_divergence, f_alpha)


def check_label_smoothing(label_smoothing: float, upper: float = 1.0) -> None:
    if not 0.0 <= label_smoothing < upper:
        raise ValueError(f"label_smoothing must be in [0, {upper}), got {label_smoothing}")


def require_lengths(name: str, chosen_lengths, rejected_lengths):
    """(chosen, rejected) lengths clamped ≥ 1; a clear error when the caller gave none."""
    if chosen_lengths is None or rejected_lengths is None:
        raise ValueError(
            f"preference loss {name!r} averages log-probs over the response length: "
            f"pass chosen_lengths and rejected_lengths (response token counts)"
        )
    return chosen_lengths.clamp_min(1.0), rejected_lengths.clamp_min(1.0)


def length_averaged_margin(
    name: str, chosen, rejected, chosen_lengths, rejected_lengths, f_divergence: str, f_alpha: float
) -> torch.Tensor:
    """h̄ = score(c)/|y_w| − score(r)/|y_l| [B] (IPO's and sigmoid_norm's margin, as TRL)."""
    n_chosen, n_rejected = require_lengths(name, chosen_lengths, rejected_lengths)
    return score(chosen, f_divergence, f_alpha) / n_chosen - score(rejected, f_divergence, f_alpha) / n_rejected
