"""The entropy bonus's coefficient: fixed, or adaptive (Skywork-OR1, TRL 1.16's
use_adaptive_entropy), step by step by hand."""

import json
import math

import pytest

from meshrl.algos.entropy_control import AdaptiveEntropyController, FixedEntropyController, entropy_controller
from meshrl.config.loss_terms import AdaptiveEntropyConfig


def test_adaptive_coefficient_moves_by_delta_and_applies_only_at_or_below_the_target():
    ctrl = AdaptiveEntropyController(0.01, target=0.5, delta=0.005, low=0.0, high=0.02)
    assert ctrl.applied == 0.0  # no entropy measured yet (TRL starts at +inf)
    seen = []
    for entropy in (0.8, 0.4, 0.3, 0.6, 0.2, 0.1, 0.1, 0.9, 0.9, 0.9, 0.9, 0.9):
        ctrl.update(entropy)
        seen.append((round(ctrl.value, 6), round(ctrl.applied, 6)))
    assert seen == [
        (0.005, 0.0),
        (0.01, 0.01),
        (0.015, 0.015),
        (0.01, 0.0),
        (0.015, 0.015),
        (0.02, 0.02),
        (0.02, 0.02),  # capped at coef_max
        (0.015, 0.0),
        (0.01, 0.0),
        (0.005, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
    ]  # floor 0


def test_state_round_trips_through_a_json_checkpoint():
    ctrl = AdaptiveEntropyController(0.01, target=0.5)
    fresh = json.loads(json.dumps(ctrl.state_dict(), allow_nan=False))  # checkpoints refuse inf
    assert fresh == {"value": 0.01, "last_entropy": None}
    ctrl.update(0.3)
    other = AdaptiveEntropyController(0.5, target=0.5)
    other.load_state_dict(json.loads(json.dumps(ctrl.state_dict(), allow_nan=False)))
    assert (other.value, other.last_entropy, other.applied) == (0.015, 0.3, 0.015)
    other.load_state_dict(fresh)
    assert other.last_entropy == math.inf and other.applied == 0.0


def test_the_config_picks_the_controller():
    assert entropy_controller(0.02, AdaptiveEntropyConfig()) == FixedEntropyController(0.02)
    assert entropy_controller(0.02).applied == 0.02
    adaptive = entropy_controller(0.0, AdaptiveEntropyConfig(enabled=True, target=1.0, delta=0.1))
    assert isinstance(adaptive, AdaptiveEntropyController) and (adaptive.target, adaptive.delta) == (1.0, 0.1)
    with pytest.raises(ValueError, match="coef_min=0.5 is above coef_max=0.1"):
        AdaptiveEntropyConfig(coef_min=0.5, coef_max=0.1)
