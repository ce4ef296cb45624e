"""PPO's critic: a value head on the policy's architecture, and the clipped value loss.

`ValueModel` = the transformer backbone (`AutoModel`, no LM head) + `Linear(hidden, 1)`.
V[b, t] is read at position P-1+t, the state *before* response token t is emitted — the
same positions whose logits score token t, as in verl/OpenRLHF.

Clipped value loss (Schulman et al. 2017; the form used by OpenAI's PPO2 and verl):

    L_V = ½ · max( (V − R)², (clip(V, V_old − c, V_old + c) − R)² )

with R the returns of the advantage estimator and V_old the values before the update;
c = `critic.cliprange_value` (None = unclipped ½ (V − R)²). The critic has its own AdamW.
Metrics over valid tokens: `critic/vf_clipfrac`, verl's meaning under verl's name, is the
fraction where the clipped term is the larger, (clip(V) − R)² > (V − R)², i.e. where the
clip changed the loss; `critic/vf_out_of_range` the fraction where V left V_old ± c at all
(it also counts tokens whose move away from V_old brought V closer to R, where the max keeps
the unclipped term). verl 0.9.1's `compute_value_loss` logs the first.

Simplifications: the backbone starts as a copy of the policy's (a reward model's weights
could be loaded the same way with `from_backbone`).
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from transformers import AutoModel

from meshrl.algos.masked import masked_mean
from meshrl.config.algorithm import CriticConfig, TrainerConfig
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.policy import (
    TrainedModel,
    build_optimizer,
    configured_bf16,
    prepare_model,
    warmup_cosine,
)


class ValueModel(nn.Module):
    """Backbone + scalar head: forward gives values [B, L] for every position."""

    def __init__(self, backbone: nn.Module):
        super().__init__()
        self.backbone = backbone
        self.config = backbone.config
        self._no_split_modules = getattr(backbone, "_no_split_modules", None)
        hidden = backbone.config.hidden_size
        self.value_head = nn.Linear(hidden, 1)
        nn.init.normal_(self.value_head.weight, std=1.0 / (hidden + 1))
        nn.init.zeros_(self.value_head.bias)

    @classmethod
    def from_config(cls, config) -> "ValueModel":
        return cls(AutoModel.from_config(config))

    @classmethod
    def from_causal_lm(cls, causal_lm: nn.Module) -> "ValueModel":
        """A critic whose backbone starts as a copy of an (unsharded) causal LM's."""
        return cls(
            copy.deepcopy(causal_lm.get_decoder() if hasattr(causal_lm, "get_decoder") else causal_lm.base_model)
        )

    def gradient_checkpointing_enable(self, **kwargs) -> None:
        self.backbone.gradient_checkpointing_enable(**kwargs)

    def set_attn_implementation(self, implementation: str) -> None:
        """The backbone's attention kernel (`trainer.attention`); its config is ours."""
        self.backbone.set_attn_implementation(implementation)

    def forward(self, input_ids, attention_mask, position_ids, **_) -> torch.Tensor:
        hidden = self.backbone(
            input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False
        ).last_hidden_state
        return self.value_head(hidden).squeeze(-1).float()


def response_values(critic: nn.Module, batch) -> torch.Tensor:
    """Values [B, T] at positions P-1 .. P+T-2 (before each response token), 0 on padding."""
    t = batch.response_len
    values = critic(batch.input_ids(), batch.attention_mask(), batch.position_ids())
    return values[:, -(t + 1) : -1] * batch.response_mask


def clipped_value_loss(
    values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor, clip: float | None
):
    """Per-token ½·max((V−R)², (clip(V, V_old±c)−R)²) [B, T] (module docstring) and metrics."""
    unclipped = (values - returns) ** 2
    if clip is None:
        loss = 0.5 * unclipped
        clipfrac = out_of_range = torch.zeros((), device=values.device)
    else:
        # V itself clamped (verl's clip_by_value), not V_old + clamp(V − V_old): inside the
        # range the clipped term is then V bit for bit, never a rounding of it
        clipped_v = torch.maximum(torch.minimum(values, old_values + clip), old_values - clip)
        clipped = (clipped_v - returns) ** 2
        loss = 0.5 * torch.maximum(unclipped, clipped)
        clipfrac = masked_mean((clipped > unclipped).float(), mask)
        out_of_range = masked_mean(((values - old_values).abs() > clip).float(), mask)
    metrics = {
        "critic/vf_clipfrac": clipfrac.detach(),
        "critic/vf_out_of_range": out_of_range.detach(),
        "critic/values": masked_mean(values.detach(), mask),
        "critic/returns": masked_mean(returns, mask),
    }
    return loss * mask, metrics


def build_critic(
    value_model: ValueModel,
    critic: CriticConfig,
    trainer: TrainerConfig,
    *,
    total_steps: int,
    dist: DistContext | None = None,
    bf16: bool | None = None,
) -> TrainedModel:
    """The critic ready to train: its own AdamW at `critic.lr` and the policy's schedule shape."""
    dist = dist or DistContext()
    model = prepare_model(value_model, trainer, dist)
    optim = trainer.optim
    optimizer = build_optimizer(model, optim, lr=critic.lr)
    schedule = warmup_cosine(optim.warmup_steps, total_steps, optim.min_lr_ratio)
    return TrainedModel(
        model,
        optimizer,
        torch.optim.lr_scheduler.LambdaLR(optimizer, schedule),
        configured_bf16(trainer) if bf16 is None else bf16,
        optim.max_grad_norm,
        dist.device,
    )
