"""The entropy-bonus coefficient: fixed, or adapted to hold the policy's entropy near a target.

Adaptive entropy control (He et al. 2025, "Skywork Open Reasoner 1 Technical Report",
arXiv:2505.22312; TRL's `use_adaptive_entropy`): with α the coefficient and H the mean
per-token entropy of the last optimizer step's tokens (over every rank),

    applied α = α if H ≤ H_target else 0
    after each optimizer step:  α ← min(α + δ, α_max) if H ≤ H_target else max(α − δ, α_min)

so the bonus switches on only once entropy has fallen to the target, and grows while it stays
there. Before the first step H = +∞ (no bonus), as TRL. `state_dict`/`load_state_dict`
carry α and H across a resume (and a rolled-back step).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from meshrl.algos.kl_control import FixedKLController


@dataclass
class FixedEntropyController(FixedKLController):
    """α stays `value` (`algorithm.entropy_coeff`); a fixed coefficient as the KL's."""

    @property
    def applied(self) -> float:
        return self.value

    def update(self, entropy: float) -> None:
        return None


@dataclass
class AdaptiveEntropyController(FixedEntropyController):
    """α adapted towards `target` entropy by steps of `delta` in [low, high] (module docstring)."""

    target: float = 0.2
    delta: float = 0.005
    low: float = 0.0
    high: float = 1.0
    last_entropy: float = math.inf

    @property
    def applied(self) -> float:
        return self.value if self.last_entropy <= self.target else 0.0

    def update(self, entropy: float) -> None:
        if entropy <= self.target:
            self.value = min(self.value + self.delta, self.high)
        else:
            self.value = max(self.value - self.delta, self.low)
        self.last_entropy = float(entropy)

    def state_dict(self) -> dict:  # JSON (checkpoints refuse inf): None before the first step
        return {"value": self.value, "last_entropy": None if math.isinf(self.last_entropy) else self.last_entropy}

    def load_state_dict(self, state: dict) -> None:
        self.value = float(state["value"])
        last = state.get("last_entropy")
        self.last_entropy = math.inf if last is None else float(last)


def entropy_controller(entropy_coeff: float, adaptive=None):
    """The controller for `algorithm.entropy_coeff` and `algorithm.adaptive_entropy`."""
    if adaptive is None or not adaptive.enabled:
        return FixedEntropyController(entropy_coeff)
    return AdaptiveEntropyController(
        entropy_coeff, adaptive.target, adaptive.delta, adaptive.coef_min, adaptive.coef_max
    )
