"""Rollout-correction weights at the level of the loss's ratio, on masks with holes.

A sequence-level loss (gspo, gmpo, luspo) takes one weight per row: the geometric mean of
its model tokens' weights (verl 0.9.1 `compute_policy_loss_geo_mean`, which computes
exp(Σ m·log(w + 1e-10) / (Σ m + 1e-8)); its numbers are reproduced here from that formula).
Token-level losses keep each token's weight.
"""

import math

import pytest
import torch

from meshrl.algos import get_policy_loss, list_policy_losses
from meshrl.algos.correction.level import sequence_geometric_mean, weights_at_level
from tests.unit.algos.holes import COLUMNS, MASK, model_tokens, spread_garbage

WEIGHTS = [[1.2, 0.5, 2.0], [1.0, 0.8, 1.5, 0.9, 1.1], [0.7, 0.7, 0.7], [2.0, 0.125], [1.3, 0.6, 1.0]]


def verl_geo_mean(row):
    """verl's seq_is_weights for one row's model-token weights."""
    return math.exp(sum(math.log(w + 1e-10) for w in row) / (len(row) + 1e-8))


def test_sequence_level_weight_is_the_geometric_mean_of_the_model_tokens():
    weights = spread_garbage(WEIGHTS, 0.0, 50.0, seed=11)  # garbage weights in holes and padding
    got = weights_at_level(weights, MASK, "sequence")
    # by hand: row 0 (1.2·0.5·2)^(1/3) = 1.2^(1/3) = 1.0627; row 3 (2·0.125)^(1/2) = 0.5
    hand = [1.2 ** (1 / 3), (1.0 * 0.8 * 1.5 * 0.9 * 1.1) ** 0.2, 0.7, 0.5, (1.3 * 0.6) ** (1 / 3)]
    for row, (values, g) in enumerate(zip(model_tokens(got), hand)):
        assert values == pytest.approx([g] * len(COLUMNS[row]), rel=1e-6)
        assert g == pytest.approx(verl_geo_mean(WEIGHTS[row]), rel=1e-6)
    assert (got[MASK == 0] == 0).all()
    # the arithmetic mean, what multiplying token by token amounts to, differs: row 3 1.0625 ≠ 0.5
    assert sum(WEIGHTS[3]) / 2 == 1.0625


def test_a_rejected_token_zeroes_its_row_and_token_level_keeps_each_weight():
    rows = [list(r) for r in WEIGHTS]
    rows[1][2] = 0.0  # masked IS rejected one token of row 1
    weights = spread_garbage(rows, 0.0, 50.0, seed=12)
    sequence = weights_at_level(weights, MASK, "sequence")
    assert model_tokens(sequence)[1] == [0.0] * 5
    assert verl_geo_mean(rows[1]) == pytest.approx(1e-2, rel=0.1)  # verl: (1e-10)^(1/5), not 0
    assert torch.equal(weights_at_level(weights, MASK, "token"), weights)
    assert weights_at_level(None, MASK, "sequence") is None


def test_constant_row_weights_are_unchanged_and_a_bad_level_is_refused():
    per_row = torch.tensor([[1.5], [0.25], [2.0], [1.0], [0.75]]) * MASK
    torch.testing.assert_close(sequence_geometric_mean(per_row, MASK), per_row)
    with pytest.raises(ValueError, match="'segment'; expected one of token, sequence"):
        weights_at_level(per_row, MASK, "segment")


def test_the_sequence_level_losses_are_registered_as_such():
    levels = {name: get_policy_loss(name).level for name in list_policy_losses()}
    assert {n for n, lv in levels.items() if lv == "sequence"} >= {"gspo", "gmpo", "luspo"}
