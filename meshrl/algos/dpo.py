"""Preference losses on (chosen, rejected) pairs for the offline DPO path.

Inputs are per-sequence *summed* response log-probs [B] of the policy and the frozen
reference. With the implicit reward r(y) = β·(log π(y) − log π_ref(y)) and

    h = (log π(y_w) − log π_ref(y_w)) − (log π(y_l) − log π_ref(y_l))

- `sigmoid`: −log σ(β·h)                      DPO, Rafailov et al. 2023. With
             `label_smoothing` ε: −(1−ε)·log σ(βh) − ε·log σ(−βh) (cDPO, Mitchell 2023).
- `ipo`:     (h − 1/(2β))²                    IPO, Azar et al. 2023, "A General Theoretical
             Paradigm to Understand Learning from Human Preferences". (TRL feeds IPO
             length-averaged log-probs; pass those if you want that variant.)
- `hinge`:   max(0, 1 − β·h)                  SLiC, Zhao et al. 2023.

Metrics (TRL's names, batch means, detached): `rewards/chosen`, `rewards/rejected`,
`rewards/margins` (chosen − rejected), `rewards/accuracies` (fraction with chosen > rejected).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from meshrl.algos.checks import check_finite, check_shapes
from meshrl.algos.registry import UnknownNameError


def _sigmoid(h, beta, label_smoothing):
    """−log σ(β·h) (Rafailov et al. 2023, Direct Preference Optimization, arXiv:2305.18290)."""
    return (-(1.0 - label_smoothing) * F.logsigmoid(beta * h)
            - label_smoothing * F.logsigmoid(-beta * h))


def _ipo(h, beta, label_smoothing):
    """(h − 1/(2β))² (Azar et al. 2023, A General Theoretical Paradigm to Understand Learning
    from Human Preferences, arXiv:2310.12036)."""
    return (h - 1.0 / (2.0 * beta)) ** 2


def _hinge(h, beta, label_smoothing):
    """max(0, 1 − β·h) (Zhao et al. 2023, SLiC-HF: Sequence Likelihood Calibration with Human
    Feedback, arXiv:2305.10425)."""
    return torch.relu(1.0 - beta * h)


DPO_KINDS = {"sigmoid": _sigmoid, "ipo": _ipo, "hinge": _hinge}


def list_dpo_kinds() -> list[str]:
    return sorted(DPO_KINDS)


def dpo_loss(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor,
             ref_chosen: torch.Tensor, ref_rejected: torch.Tensor, beta: float = 0.1,
             kind: str = "sigmoid", label_smoothing: float = 0.0):
    """Per-pair loss [B] and metrics for preference pairs (module docstring).

    Returns `(loss [B], metrics: dict[str, 0-dim tensor])`; take `loss.mean()` for a batch.
    """
    if kind not in DPO_KINDS:
        raise UnknownNameError(f"unknown DPO loss kind {kind!r}; registered: {', '.join(list_dpo_kinds())}")
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    inputs = dict(policy_chosen=policy_chosen, policy_rejected=policy_rejected,
                  ref_chosen=ref_chosen, ref_rejected=ref_rejected)
    check_shapes(**{k: (v, "B") for k, v in inputs.items()})
    for name, tensor in inputs.items():
        check_finite(name, tensor)
    chosen_logratio = policy_chosen - ref_chosen.detach()
    rejected_logratio = policy_rejected - ref_rejected.detach()
    loss = DPO_KINDS[kind](chosen_logratio - rejected_logratio, beta, label_smoothing)
    return loss, _reward_metrics(beta * chosen_logratio.detach(), beta * rejected_logratio.detach())


def _reward_metrics(chosen: torch.Tensor, rejected: torch.Tensor) -> dict[str, torch.Tensor]:
    return {
        "rewards/chosen": chosen.mean(),
        "rewards/rejected": rejected.mean(),
        "rewards/margins": (chosen - rejected).mean(),
        "rewards/accuracies": (chosen > rejected).to(chosen.dtype).mean(),
    }
