"""The KL coefficient for KL-in-reward: fixed, or adapted towards a target KL.

Adaptive controller (Ziegler et al. 2019, "Fine-Tuning Language Models from Human
Preferences", arXiv:1909.08593; TRL's and verl's `AdaptiveKLController`): after each batch of
n sequences whose measured KL to the reference is KL,

    e = clip(KL / KL_target − 1, −0.2, 0.2),   β ← β · (1 + e · n / horizon)

so β grows while the policy drifts beyond the target and shrinks below it, by at most 20 %
per `horizon` sequences. KL is verl's `current_kl`: the mean over sequences of each
sequence's token-mean KL estimate. The batch is penalised with β as it was before the
update (verl's order). `state_dict`/`load_state_dict` carry β across a resume.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR_CLIP = 0.2  # Ziegler et al.'s bound on the proportional error


@dataclass
class FixedKLController:
    """β stays `value` (`algorithm.kl_ctrl: fixed`)."""

    value: float

    def update(self, current_kl: float, n_steps: int) -> None:
        return None

    def state_dict(self) -> dict:
        return {"value": self.value}

    def load_state_dict(self, state: dict) -> None:
        self.value = float(state["value"])


@dataclass
class AdaptiveKLController(FixedKLController):
    """β adapted towards `target` KL over `horizon` sequences (module docstring)."""

    target: float = 0.1
    horizon: int = 10000

    def __post_init__(self):
        if not (self.value > 0 and self.target > 0 and self.horizon >= 1):
            raise ValueError(
                f"adaptive KL needs kl_coef > 0, kl_target > 0 and kl_horizon >= 1; "
                f"got {self.value}, {self.target}, {self.horizon}"
            )

    def update(self, current_kl: float, n_steps: int) -> None:
        error = min(max(current_kl / self.target - 1.0, -ERROR_CLIP), ERROR_CLIP)
        self.value *= 1.0 + error * n_steps / self.horizon


def kl_controller(kind: str, kl_coef: float, target: float = 0.1, horizon: int = 10000):
    """The controller `algorithm.kl_ctrl` names, starting at `kl_coef`."""
    if kind == "fixed":
        return FixedKLController(kl_coef)
    if kind == "adaptive":
        return AdaptiveKLController(kl_coef, target, horizon)
    raise ValueError(f"algorithm.kl_ctrl={kind!r}; expected fixed or adaptive")


# a train step's adaptive coefficients, by attribute: the KL one here, the entropy bonus's
# (meshrl.algos.entropy_control); each has state_dict / load_state_dict
CONTROLLERS = ("kl_ctrl", "entropy_ctrl")


def controller_state(train_step) -> dict:
    """The checkpoint entries for a train step's controllers ({} if it keeps none)."""
    found = {name: getattr(train_step, name, None) for name in CONTROLLERS}
    return {name: ctrl.state_dict() for name, ctrl in found.items() if ctrl is not None}


def restore_controller(train_step, saved: dict) -> None:
    """Put a checkpoint's coefficients back (older checkpoints have none: keep the config's)."""
    for name in CONTROLLERS:
        ctrl = getattr(train_step, name, None)
        if ctrl is not None and name in saved:
            ctrl.load_state_dict(saved[name])
