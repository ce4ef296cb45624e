"""The policy loss's extra terms: loss masks and the adaptive entropy coefficient.

    algorithm:
      loss_masks:                 # token filters on the policy-gradient term (meshrl/algos/loss_masks/)
        top_entropy: {quantile: 0.2}     # TRL's top_entropy_quantile
        off_policy: {threshold: 0.5}     # TRL's off_policy_mask_threshold
      entropy_coeff: 0.01         # the bonus's coefficient (the initial one when adaptive)
      adaptive_entropy:           # TRL's use_adaptive_entropy (Skywork-OR1)
        enabled: true
        target: 0.2               # entropy_target (nats)
        delta: 0.005              # entropy_coef_delta
        coef_min: 0.0             # entropy_coef_min
        coef_max: 1.0             # entropy_coef_max
      use_bias_correction_kl: false   # TRL's: the KL term times the importance ratio
      pf_ppo:                     # verl's PF-PPO: redraw the batch's rows by reward
        enabled: true
        reweight_method: pow      # pow | max_min | max_random (meshrl/algos/resampling/)
        weight_pow: 2.0

Mask names and their options, and PF-PPO's methods, are read from the parts table, written
from the registries of meshrl/algos/loss_masks/ and meshrl/algos/resampling/
(meshrl.config.parts), so a typo is refused at load with the closest name.
"""

from pydantic import Field, field_validator, model_validator

from meshrl.config.parts import check_name, loss_masks, reweightings
from meshrl.config.values import Strict


class AdaptiveEntropyConfig(Strict):
    """Adapt `entropy_coeff` towards a target entropy (meshrl/algos/entropy_control.py)."""

    enabled: bool = False
    target: float = Field(0.2, ge=0.0)
    delta: float = Field(0.005, gt=0.0)
    coef_min: float = Field(0.0, ge=0.0)
    coef_max: float = Field(1.0, ge=0.0)

    @model_validator(mode="after")
    def _bounds(self) -> "AdaptiveEntropyConfig":
        if self.coef_min > self.coef_max:
            raise ValueError(f"algorithm.adaptive_entropy.coef_min={self.coef_min} is above coef_max={self.coef_max}")
        return self


class PfPpoConfig(Strict):
    """PF-PPO: redraw the batch's rows with probability from their reward (verl's pf_ppo)."""

    enabled: bool = False
    reweight_method: str = "pow"
    weight_pow: float = Field(2.0, gt=0.0)

    @field_validator("reweight_method")
    @classmethod
    def _known_method(cls, name: str) -> str:
        return check_name("algorithm.pf_ppo.reweight_method", name, reweightings(), "PF-PPO reweighting")


def check_loss_masks(configured: dict[str, dict]) -> dict[str, dict]:
    """Every name a registered loss mask and every option one it takes (ValueError naming the fix)."""
    declared = loss_masks()
    for name, options in configured.items():
        check_name("algorithm.loss_masks", name, declared, "loss mask")
        unknown = sorted(set(options) - set(declared[name].options))
        if unknown:
            raise ValueError(
                f"algorithm.loss_masks.{name} has {', '.join(map(repr, unknown))}, "
                f"which {name} does not take; its options: "
                f"{', '.join(declared[name].options) or 'none'}"
            )
    return configured
