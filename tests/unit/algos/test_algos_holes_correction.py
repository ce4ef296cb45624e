"""Every registered rollout-correction mode and rejection criterion, and batch normalisation,
on multi-turn trajectories (masks with holes, `tests/unit/algos/holes.py`), against values
computed here by hand from verl 0.9.1's formulas (`rollout_corr_helper.py`:
compute_rollout_correction_weights, compute_rollout_rejection_mask) over the model tokens.

d = log π_old − log μ at the model tokens, per row (OLD − BEHAVIOUR below):

    row 0: [−0.1, 0, 0.7]   row 1: [0, 0.5, 0, 0, −1.0]   row 2: [0, −0.1, 0]
    row 3: [−1.0, 0]        row 4: [0, 0, 0]

The holes and the padding hold log-probs in [−8, 0]: a d of up to ±8 there, which would
trip every criterion and move every mean if it were read.
"""

import math

import pytest
import torch

from meshrl.algos.correction.registry import REJECTIONS, ROLLOUT_WEIGHTS
from meshrl.algos.rollout_correction import rejection_mask, rollout_correction
from tests.unit.algos.holes import LENGTHS, MASK, model_tokens, spread_garbage
from tests.unit.algos.test_algos_holes_losses import OLD, TOKENS, rows_of

BEHAVIOUR = [[-0.4, -1.0, -0.9], [-0.1, -2.5, -0.3, -0.7, -0.2], [-0.4, -0.3, -0.9], [-0.5, -0.05], [-0.6, -0.8, -0.25]]
D = [[lo - mu for lo, mu in row] for row in rows_of(OLD, BEHAVIOUR)]
CAP, LOG_CAP = 1.5, math.log(1.5)


def garbage_inputs(seed: int = 7):
    return spread_garbage(OLD, -8.0, 0.0, seed=seed), spread_garbage(BEHAVIOUR, -8.0, 0.0, seed=seed + 1)


# ---- weights modes ---------------------------------------------------------------------
def icepop(ratio, lower=1 / CAP):
    return ratio if lower <= ratio <= CAP else 0.0


# mode → (options, weights per model token, truncated tokens, zeroed tokens), cap 1.5
WEIGHTS = {
    "none": ({}, [[1.0] * n for n in LENGTHS], 0, 0),
    "token": ({}, [[math.exp(min(d, LOG_CAP)) for d in row] for row in D], 2, 0),  # 0.7, 0.5 cut
    "sequence": ({}, [[math.exp(min(sum(row), LOG_CAP))] * len(row) for row in D], 3, 0),  # row 0
    "mask": ({}, [[float(abs(d) <= LOG_CAP) for d in row] for row in D], 0, 4),  # 0.7, 0.5, −1, −1
    # IcePop, lower 0.8: ρ = 0.905 (d = −0.1) kept; 2.01, 1.65, 0.368 (twice) zeroed
    "icepop": ({"lower": 0.8}, [[icepop(math.exp(d), 0.8) for d in row] for row in D], 0, 4),
    # sequence ρ: e^0.6 = 1.82 (out), e^−0.5 = 0.61 (out, < 1/1.5), e^−0.1 = 0.905, e^−1, e^0 = 1
    "icepop_sequence": ({}, [[icepop(math.exp(sum(row)))] * len(row) for row in D], 0, 3 + 5 + 2),
}


def test_every_registered_correction_part_has_a_case():
    assert sorted(WEIGHTS) == ROLLOUT_WEIGHTS.names()
    assert sorted(REJECTS) == REJECTIONS.names()


@pytest.mark.parametrize("mode", sorted(WEIGHTS))
def test_weights_mode_reads_model_tokens_only(mode):
    options, expected, truncated, zeroed = WEIGHTS[mode]
    weights, metrics = rollout_correction(*garbage_inputs(), MASK, mode, CAP, **options)
    for got, want in zip(model_tokens(weights), expected):
        assert got == pytest.approx(want, abs=1e-6), mode
    assert (weights[MASK == 0] == 0).all()
    d = [x for row in D for x in row]
    assert metrics["mismatch_kl"].item() == pytest.approx(sum(math.exp(x) - 1 - x for x in d) / TOKENS, abs=1e-6)
    assert metrics["truncated_frac"].item() == pytest.approx(truncated / TOKENS)
    assert metrics["masked_frac"].item() == pytest.approx(zeroed / TOKENS)
    assert metrics["weight/mean"].item() == pytest.approx(sum(map(sum, expected)) / TOKENS, abs=1e-6)


def test_icepop_keeps_the_ratio_itself_inside_its_bounds():
    weights, _ = rollout_correction(*garbage_inputs(), MASK, "icepop", CAP, lower=0.8)
    assert model_tokens(weights)[0] == pytest.approx([math.exp(-0.1), 1.0, 0.0], abs=1e-6)
    assert model_tokens(weights)[1] == pytest.approx([1.0, 0.0, 1.0, 1.0, 0.0], abs=1e-6)
    weights, _ = rollout_correction(*garbage_inputs(), MASK, "icepop_sequence", CAP)
    assert [row[0] for row in model_tokens(weights)] == pytest.approx([0.0, 0.0, math.exp(-0.1), 0.0, 1.0], abs=1e-6)


# ---- batch normalisation ---------------------------------------------------------------
def test_batch_normalised_token_weights_average_one_over_model_tokens():
    weights, metrics = rollout_correction(*garbage_inputs(), MASK, "token", CAP, batch_normalize=True)
    raw = WEIGHTS["token"][1]
    mean = sum(map(sum, raw)) / TOKENS  # (10·1 + 2·1.5 + 2·e^−0.1 + 2·e^−1) / 16 = 0.9716
    assert mean == pytest.approx(0.97159, abs=1e-5)
    assert metrics["batch_norm_factor"].item() == pytest.approx(mean, abs=1e-6)
    for got, want in zip(model_tokens(weights), raw):
        assert got == pytest.approx([w / mean for w in want], abs=1e-6)
    assert (weights[MASK == 0] == 0).all()
    assert metrics["weight/mean"].item() == pytest.approx(mean, abs=1e-6)  # before normalising


def test_batch_normalised_sequence_weights_average_one_over_sequences():
    reduced = []

    def all_reduce(t):  # a second rank with the same (sum, count): the mean is unchanged
        reduced.append(t.clone())
        return t * 2

    weights, metrics = rollout_correction(
        *garbage_inputs(), MASK, "sequence", CAP, batch_normalize=True, all_reduce=all_reduce
    )
    per_row = [math.exp(min(sum(row), LOG_CAP)) for row in D]  # 1.5, e^−0.5, e^−0.1, e^−1, 1
    mean = sum(per_row) / 5
    assert reduced[0].tolist() == pytest.approx([sum(per_row), 5.0], abs=1e-6)
    assert metrics["batch_norm_factor"].item() == pytest.approx(mean, abs=1e-6)
    assert [row[0] for row in model_tokens(weights)] == pytest.approx([w / mean for w in per_row], abs=1e-6)


def test_all_zero_weights_are_left_as_they_are():
    old, behaviour = garbage_inputs()
    weights, metrics = rollout_correction(old, behaviour - 5.0, MASK, "icepop", CAP, batch_normalize=True)
    assert (weights == 0).all() and metrics["batch_norm_factor"].item() == 1.0


# ---- rejection -----------------------------------------------------------------------------
K = {"k1": lambda d: -d, "k2": lambda d: 0.5 * d * d, "k3": lambda d: math.exp(d) - 1 - d}


def within(statistic, threshold, two_sided):
    if not two_sided:
        return statistic <= threshold
    low, high = (1 / threshold, threshold) if isinstance(threshold, float) else threshold
    return math.log(low) <= statistic <= math.log(high)


def hand_keep(name, threshold):
    """Kept model tokens per row, by verl's formulas."""
    level, k = name.rsplit("_", 1)
    two_sided, f = k == "k1", K[k]
    if level == "token":
        return [[within(f(d), threshold, two_sided) for d in row] for row in D]
    reduce = {"seq_sum": sum, "seq_mean": lambda v: sum(v) / len(v), "seq_max": max}[level]
    return [[within(reduce([f(d) for d in row]), threshold, two_sided)] * len(row) for row in D]


# criterion → (threshold, the rows (sequence) or tokens (token) it keeps, worked out by hand)
REJECTS = {
    "token_k1": (1.5, [[1, 1, 0], [1, 0, 1, 1, 0], [1, 1, 1], [0, 1], [1, 1, 1]]),  # |d| ≤ 0.405
    "token_k2": (0.1, [[1, 1, 0], [1, 0, 1, 1, 0], [1, 1, 1], [0, 1], [1, 1, 1]]),  # ½d² ≤ 0.1
    "token_k3": (0.1, [[1, 1, 0], [1, 0, 1, 1, 0], [1, 1, 1], [0, 1], [1, 1, 1]]),  # 0.31, 0.15, 0.37 out
    "seq_sum_k1": (1.5, [0, 0, 1, 0, 1]),  # Σ −d = −0.6, 0.5, 0.1, 1.0, 0
    "seq_sum_k2": (0.3, [1, 0, 1, 0, 1]),  # Σ ½d² = 0.25, 0.625, 0.005, 0.5, 0
    "seq_sum_k3": (0.3, [0, 0, 1, 0, 1]),  # Σ k3 = 0.319, 0.517, 0.005, 0.368, 0
    "seq_mean_k1": (1.2, [0, 1, 1, 0, 1]),  # mean −d = −0.2, 0.1, 0.033, 0.5, 0 in ±0.182
    "seq_mean_k2": (0.1, [1, 0, 1, 0, 1]),  # 0.083, 0.125, 0.002, 0.25, 0
    "seq_mean_k3": (0.1, [0, 0, 1, 0, 1]),  # 0.106, 0.103, 0.002, 0.184, 0
    "seq_max_k2": (0.2, [0, 0, 1, 0, 1]),  # 0.245, 0.5, 0.005, 0.5, 0
    "seq_max_k3": (0.2, [0, 0, 1, 0, 1]),  # 0.314, 0.368, 0.005, 0.368, 0
}


def by_hand(name):
    threshold, kept = REJECTS[name]
    return kept if name.startswith("token") else [[k] * n for k, n in zip(kept, LENGTHS)]


@pytest.mark.parametrize("name", sorted(REJECTS))
def test_rejection_criterion_reads_model_tokens_only(name):
    threshold, _ = REJECTS[name]
    kept, metrics = rejection_mask(*garbage_inputs(), MASK, {name: threshold})
    expected = by_hand(name)
    assert [[bool(k) for k in row] for row in expected] == hand_keep(name, threshold)  # the formula
    assert model_tokens(kept) == [[float(k) for k in row] for row in expected]
    assert (kept[MASK == 0] == 0).all()
    rejected = sum(1 - k for row in expected for k in row)
    assert metrics[f"reject/{name}"].item() == pytest.approx(rejected / TOKENS)
    assert metrics["rejected_frac"].item() == pytest.approx(rejected / TOKENS)


def test_k1_takes_asymmetric_ratio_bounds_and_criteria_combine():
    # token_k1 in [0.5, 1.2]: −d in [−0.693, 0.182], so d = 0.5 is kept, d = 0.7 and −1.0 are not
    kept, _ = rejection_mask(*garbage_inputs(), MASK, {"token_k1": (0.5, 1.2)})
    assert model_tokens(kept)[1] == [1.0, 1.0, 1.0, 1.0, 0.0] and model_tokens(kept)[0] == [1.0, 1.0, 0.0]
    # both must pass: seq_mean_k1 keeps rows 1, 2, 4; token_k2 then drops row 1's d = 0.5, −1.0
    kept, metrics = rejection_mask(*garbage_inputs(), MASK, {"seq_mean_k1": 1.2, "token_k2": 0.1})
    assert model_tokens(kept) == [[0.0] * 3, [1.0, 0.0, 1.0, 1.0, 0.0], [1.0] * 3, [0.0] * 2, [1.0] * 3]
    assert metrics["rejected_frac"].item() == pytest.approx(7 / TOKENS)


def test_bad_thresholds_are_refused_naming_the_criterion():
    with pytest.raises(ValueError, match="reject.token_k3 takes one positive upper bound"):
        rejection_mask(*garbage_inputs(), MASK, {"token_k3": (0.1, 0.2)})
    with pytest.raises(ValueError, match="reject.seq_sum_k1 needs 0 < lower <= upper"):
        rejection_mask(*garbage_inputs(), MASK, {"seq_sum_k1": 0.5})  # lower 2 > upper 0.5
    with pytest.raises(KeyError, match="unknown rejection criterion 'seq_k3'"):
        rejection_mask(*garbage_inputs(), MASK, {"seq_k3": 0.1})
    with pytest.raises(ValueError, match="lower bound must be in"):
        rollout_correction(*garbage_inputs(), MASK, "icepop", CAP, lower=2.0)
    assert torch.equal(rejection_mask(*garbage_inputs(), MASK, {})[0], MASK)
