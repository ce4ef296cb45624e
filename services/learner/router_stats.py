"""The MoE router's load balance and auxiliary loss, logged with each training step.

Forward hooks on every top-k router (a module with `top_k` and `num_experts` that returns
(router_logits, scores, expert indices), as transformers' Qwen2/Qwen3-MoE and OLMoE routers
do) add up, over every token of the step's forwards, how often each expert was picked (f_i,
the share of the top-k slots) and its mean router probability (P_i). Logged per step:

    moe/aux_loss   = E · Σ_i f_i · P_i     Switch Transformer's load-balancing loss (Fedus et
                                           al. 2021, arXiv:2101.03961): 1 when balanced
    moe/load_max   = E · max_i f_i         1 when balanced; E when one expert takes every token
    moe/load_min   = E · min_i f_i         0 when an expert is never picked

Padding tokens are counted too (they pass the router like any token). Logged, not added to
the loss: the policy loss is what is trained. A dense model has no routers: nothing logged.
"""

from __future__ import annotations

import torch
from torch import nn


def routers_of(model: nn.Module) -> list[nn.Module]:
    return [
        m
        for m in model.modules()
        if hasattr(m, "top_k") and hasattr(m, "num_experts") and isinstance(getattr(m, "weight", None), torch.Tensor)
    ]


class RouterStats:
    def __init__(self, model: nn.Module):
        self.routers = routers_of(model)
        self.experts = self.routers[0].num_experts if self.routers else 0
        self.reset()
        for router in self.routers:
            router.register_forward_hook(self._observe)

    def reset(self) -> None:
        self.picks = torch.zeros(self.experts, dtype=torch.float64)
        self.probs = torch.zeros(self.experts, dtype=torch.float64)
        self.tokens = 0

    @torch.no_grad()
    def _observe(self, module, inputs, output) -> None:
        logits, _, indices = output
        self.picks += torch.bincount(indices.reshape(-1).cpu(), minlength=self.experts).double()
        self.probs += torch.softmax(logits.detach().float(), dim=-1).sum(0).cpu().double()
        self.tokens += logits.shape[0]

    def take(self) -> dict[str, float]:
        """The step's metrics (module docstring), then start counting afresh."""
        if not self.tokens:
            return {}
        share = self.picks / self.picks.sum()
        mean_prob = self.probs / self.tokens
        metrics = {
            "moe/aux_loss": float(self.experts * (share * mean_prob).sum()),
            "moe/load_max": float(self.experts * share.max()),
            "moe/load_min": float(self.experts * share.min()),
        }
        self.reset()
        return metrics


def with_router_stats(train_step, model: nn.Module):
    """`train_step` whose metrics also carry the routers' (module docstring); `train_step`
    itself for a dense model."""
    stats = RouterStats(model)
    if not stats.routers:
        return train_step

    def step(batch, step_index: int) -> dict[str, float]:
        stats.reset()
        metrics = train_step(batch, step_index)
        metrics.update(stats.take())
        return metrics

    return step
