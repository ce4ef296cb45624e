"""`algorithm.rollout_correction`: the engine/trainer log-prob mismatch, weighted and rejected.

    rollout_correction:
      mode: token            # a registered weights mode: none, token, sequence (truncated IS),
                             # mask (masked IS), icepop, icepop_sequence (IcePop)
      cap: 2.0               # C: the truncation cap / the mask's and IcePop's upper bound
      lower: null            # IcePop's lower bound (default 1/C); only the modes that take it
      batch_normalize: false # divide the weights by their batch mean (verl's rollout_is_batch_normalize)
      reject:                # criteria that drop tokens / sequences (verl's rollout_rs), each
        seq_mean_k3: 0.01    #   with its threshold; k1 criteria take an upper bound u
        token_k1: [0.5, 2.0] #   (lower 1/u) or [lower, upper] ratio bounds

Names are read from the parts table, written from the registries of meshrl/algos/correction/
(meshrl.config.parts), so a typo or a pair given to a one-sided criterion is refused at load,
naming the fix.
"""

from pydantic import Field, field_validator, model_validator

from meshrl.config.parts import check_name, rejection_criteria, rollout_correction_modes
from meshrl.config.values import Strict


class RolloutCorrectionConfig(Strict):
    """Correct for the gap between the rollout engine's and the trainer's log-probs (module docstring)."""

    mode: str = "token"
    cap: float = Field(2.0, gt=1.0)
    lower: float | None = Field(None, gt=0.0)
    batch_normalize: bool = False
    reject: dict[str, float | tuple[float, float]] = {}

    @field_validator("mode")
    @classmethod
    def _known_mode(cls, name: str) -> str:
        return check_name(
            "algorithm.rollout_correction.mode", name, rollout_correction_modes(), "rollout-correction mode"
        )

    @field_validator("reject")
    @classmethod
    def _known_criteria(cls, reject: dict) -> dict:
        criteria = rejection_criteria()
        for name, threshold in reject.items():
            key = f"algorithm.rollout_correction.reject.{name}"
            check_name("algorithm.rollout_correction.reject", name, criteria, "rejection criterion")
            pair = isinstance(threshold, tuple)
            if pair and not criteria[name].two_sided:
                raise ValueError(
                    f"{key}={list(threshold)}: {name} is bounded above only; give one "
                    f"number (pairs [lower, upper] are for the k1 criteria)"
                )
            low, high = threshold if pair else (None, threshold)
            if not high > 0 or (low is not None and not 0 < low <= high):
                raise ValueError(f"{key}={threshold}: thresholds must be > 0 (and lower <= upper)")
        return reject

    @model_validator(mode="after")
    def _lower_fits(self) -> "RolloutCorrectionConfig":
        if self.lower is None:
            return self
        if "lower" not in rollout_correction_modes()[self.mode].options:
            takers = [n for n, d in rollout_correction_modes().items() if "lower" in d.options]
            raise ValueError(
                f"algorithm.rollout_correction.lower={self.lower} does nothing with "
                f"mode {self.mode!r}; remove it or use a mode that takes it "
                f"({', '.join(takers)})"
            )
        if not self.lower < self.cap:
            raise ValueError(f"algorithm.rollout_correction.lower={self.lower} must be below cap={self.cap}")
        return self
