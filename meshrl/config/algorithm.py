"""Algorithm and optimisation settings. An algorithm is a choice of registered parts.

Option names follow TRL and verl where those exist (`epsilon`, `epsilon_high`,
`loss_agg_mode`, `kl_coef`, `entropy_coeff`, `importance_sampling_level`, ...), so people
who run those can read a meshrl config at a glance. `name` is a label for humans and
metrics; the training loop never branches on it.
"""
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Strict(BaseModel):
    """Base for every config section: unknown keys are errors, not silently ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class CriticConfig(Strict):
    """A value head on the policy's architecture (PPO). Disabled when `enabled` is false."""

    enabled: bool = False
    lr: float = 1e-5
    vf_coef: float = 0.5
    cliprange_value: float | None = 0.2  # None = unclipped value loss


class RolloutCorrectionConfig(Strict):
    """Correct for the gap between the rollout engine's and the trainer's log-probs.

    mode: none; token / sequence = truncated importance sampling (weight = min(ratio, cap));
    mask = drop tokens whose ratio leaves [1/cap, cap].
    """

    mode: Literal["none", "token", "sequence", "mask"] = "token"
    cap: float = Field(2.0, gt=1.0)


class OverlongConfig(Strict):
    """DAPO's soft overlong punishment: a linear penalty over the last `buffer_len` tokens."""

    enabled: bool = False
    buffer_len: int = Field(16, ge=1)
    penalty_factor: float = Field(1.0, ge=0.0)


class AlgorithmConfig(Strict):
    """Which parts make the algorithm, and their knobs."""

    name: str = "grpo"
    advantage_estimator: str = "grpo"
    policy_loss: str = "ppo"
    # advantage estimation
    gamma: float = Field(1.0, ge=0.0, le=1.0)
    lam: float = Field(1.0, ge=0.0, le=1.0)
    norm_adv_by_std_in_grpo: bool = True
    # policy loss
    epsilon: float = Field(0.2, gt=0.0)
    epsilon_high: float | None = Field(None, gt=0.0)  # None = symmetric clip (epsilon)
    dual_clip_c: float | None = Field(None, gt=1.0)  # e.g. 3.0; applies only where A < 0
    importance_sampling_level: Literal["token", "sequence"] = "token"
    loss_agg_mode: str = "token-mean"
    # KL to the reference model
    kl_coef: float = Field(0.0, ge=0.0)
    kl_estimator: str = "k3"
    kl_in: Literal["loss", "reward"] = "loss"
    entropy_coeff: float = 0.0
    # DAPO
    dynamic_sampling: bool = False
    max_sampling_rounds: int = Field(4, ge=1)
    overlong: OverlongConfig = OverlongConfig()
    # PPO
    critic: CriticConfig = CriticConfig()
    # DPO (offline preference pairs)
    beta: float = Field(0.1, gt=0.0)
    dpo_loss_type: str = "sigmoid"
    offline: bool = False
    rollout_correction: RolloutCorrectionConfig = RolloutCorrectionConfig()

    @property
    def needs_reference(self) -> bool:
        return self.kl_coef > 0.0 or self.offline


class OptimConfig(Strict):
    """AdamW with linear warmup then cosine decay to `min_lr_ratio` of the peak."""

    lr: float = Field(1e-6, gt=0.0)
    weight_decay: float = Field(0.0, ge=0.0)
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_steps: int = Field(0, ge=0)
    min_lr_ratio: float = Field(0.1, ge=0.0, le=1.0)
    max_grad_norm: float = Field(1.0, gt=0.0)


class TrainerConfig(Strict):
    """How one step is computed: epochs, mini-batches, micro-batches, precision."""

    ppo_epochs: int = Field(1, ge=1)
    mini_batches: int = Field(1, ge=1)  # optimizer steps per epoch
    micro_batch_size: int = Field(4, ge=1)  # sequences per forward/backward
    bf16: bool = False  # bf16 autocast
    gradient_checkpointing: bool = False
    seed: int = 0
    optim: OptimConfig = OptimConfig()
