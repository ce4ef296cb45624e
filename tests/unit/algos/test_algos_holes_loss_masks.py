"""Every registered loss mask, and the importance-weighted KL, on multi-turn trajectories (masks
with holes, tests/unit/algos/holes.py), against values worked out by hand from TRL 1.16.0's
formulas (GRPOTrainer.get_high_entropy_mask, get_off_policy_mask, use_bias_correction_kl).

The holes hold values that would change every answer if they were read: entropies above
every model token's (they would move the quantile), log-probs far off the sampler's.
"""

import math

import pytest
import torch

from meshrl.algos import kl_estimate
from meshrl.algos.kl_weighting import importance_weighted_kl
from meshrl.algos.loss_masks import apply_loss_masks
from meshrl.algos.loss_masks.registry import LOSS_MASKS
from tests.unit.algos.holes import MASK, model_tokens, spread, spread_garbage
from tests.unit.algos.test_algos_holes_losses import ADVANTAGES, LOGPROBS, OLD, REF, rows_of

# entropy per model token; sorted: 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 1.0 1.1 1.2 1.3 1.4 1.5 1.6
ENTROPY = [[0.5, 1.6, 0.1], [0.9, 0.3, 1.2, 0.7, 1.4], [0.2, 1.0, 0.8], [1.5, 0.4], [0.6, 1.3, 1.1]]
# the engine's log-probs: row means of (μ − π) = 0.2, −0.3, 0.5, 0.15, 0.6 with π = LOGPROBS
BEHAVIOUR = [
    [-0.4 + 0.2, -1.2 + 0.1, -0.1 + 0.3],
    [-0.3 - 0.3, -1.5 - 0.3, -0.2 - 0.3, -0.9 - 0.3, -1.0 - 0.3],
    [-0.6 + 0.5, -0.3 + 0.5, -0.8 + 0.5],
    [-1.0 + 0.3, -0.1],
    [-0.5 + 0.6, -1.1 + 0.6, -0.2 + 0.6],
]


def inputs(seed=0):
    return dict(
        logprobs=spread_garbage(LOGPROBS, -8.0, 0.0, seed=seed),
        old_logprobs=spread_garbage(OLD, -8.0, 0.0, seed=seed + 1),
        behaviour_logprobs=spread_garbage(BEHAVIOUR, -8.0, 0.0, seed=seed + 2),
        advantages=spread_garbage(ADVANTAGES, -50.0, 50.0, seed=seed + 3),
        entropy=spread_garbage(ENTROPY, 2.0, 9.0, seed=seed + 4),
        response_mask=MASK,
    )


def keep_by_threshold(threshold):
    return [[float(h >= threshold) for h in row] for row in ENTROPY]


# name → (options, kept model tokens by hand)
CASES = {
    # ρ = 0.25: τ = quantile_0.75 of the 16 values = 1.2 + 0.25·(1.3 − 1.2) = 1.225 (linear, at
    # rank 0.75·15 = 11.25): keeps 1.3, 1.4, 1.5, 1.6
    "top_entropy": ({"quantile": 0.25}, keep_by_threshold(1.225)),
    # δ = 0.4: rows 2 (0.5) and 4 (0.6) are off-policy, so their A < 0 tokens go: row 4's all
    # three (A = −1); row 2 has A = 0.3 > 0 everywhere; rows 0, 1, 3 stay (0.2, −0.3, 0.15 ≤ δ)
    "off_policy": ({"threshold": 0.4}, [[1.0] * 3, [1.0] * 5, [1.0] * 3, [1.0] * 2, [0.0] * 3]),
}


def test_every_registered_loss_mask_has_a_case():
    assert sorted(CASES) == LOSS_MASKS.names()


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_mask_reads_model_tokens_only(name):
    options, expected = CASES[name]
    pg, bonus, kept = apply_loss_masks({name: options}, **inputs())
    assert model_tokens(pg) == expected
    assert (pg[MASK == 0] == 0).all()
    assert kept[name].item() == pytest.approx(sum(map(sum, expected)) / 16)
    if LOSS_MASKS.get(name).also_entropy:
        assert torch.equal(bonus, pg)
    else:
        assert bonus is None
    again, _, _ = apply_loss_masks({name: options}, **inputs(seed=20))  # other garbage
    assert torch.equal(pg, again)


def test_top_entropy_edges_and_masks_combine():
    one, _, _ = apply_loss_masks({"top_entropy": {"quantile": 0.0}}, **inputs())
    assert model_tokens(one) == keep_by_threshold(1.6)  # only the highest
    every, _, _ = apply_loss_masks({"top_entropy": {"quantile": 1.0}}, **inputs())
    assert torch.equal(every, MASK)
    both, bonus, _ = apply_loss_masks({"top_entropy": {"quantile": 0.25}, "off_policy": {"threshold": 0.4}}, **inputs())
    # 1.3 sat in row 4 (dropped as off-policy): 1.4, 1.5, 1.6 remain for the policy gradient,
    # the entropy bonus keeps its own mask (TRL applies only the entropy mask to it)
    assert sum(map(sum, model_tokens(both))) == 3.0
    assert model_tokens(bonus) == keep_by_threshold(1.225)
    with pytest.raises(ValueError, match="quantile must be in \\[0, 1\\]"):
        apply_loss_masks({"top_entropy": {"quantile": 1.5}}, **inputs())


def test_off_policy_uses_old_log_probs_without_the_engines():
    values = inputs()
    values["behaviour_logprobs"] = None
    pg, _, _ = apply_loss_masks({"off_policy": {"threshold": 0.03}}, **values)
    # mean(π_old − π) per row: 0, −0.08, 0, −0.225, 0.05: only row 4 (A = −1) is dropped
    divergence = [sum(o - lp for lp, o in row) / len(row) for row in rows_of(LOGPROBS, OLD)]
    expected = [[float(a >= 0 or d <= 0.03) for (a,) in row] for row, d in zip(rows_of(ADVANTAGES), divergence)]
    assert expected[4] == [0.0] * 3 and sum(map(sum, expected)) == 13
    assert model_tokens(pg) == expected


@pytest.mark.parametrize("level", ["token", "sequence"])
def test_importance_weighted_kl_on_model_tokens(level):
    """ρ·k3 with ρ = π/π_old per token, or exp(mean over the row's model tokens) per sequence;
    d/dlog π of ρ·k3 = ρ·k3 + ρ·(1 − exp(ref − log π)) (ρ's own gradient counts)."""
    logprobs = spread_garbage(LOGPROBS, -8.0, 0.0, seed=30).requires_grad_(True)
    ref, old = spread_garbage(REF, -8.0, 0.0, seed=31), spread_garbage(OLD, -8.0, 0.0, seed=32)
    weighted = importance_weighted_kl(kl_estimate(logprobs, ref, "k3", MASK), logprobs, old, MASK, level)
    weighted.sum().backward()
    for r, row in enumerate(rows_of(LOGPROBS, OLD, REF)):
        seq = math.exp(sum(lp - o for lp, o, _ in row) / len(row))
        for t, (lp, o, q) in enumerate(row):
            rho = math.exp(lp - o) if level == "token" else seq
            k3 = math.exp(q - lp) - 1 - (q - lp)
            assert model_tokens(weighted)[r][t] == pytest.approx(rho * k3, rel=1e-4, abs=1e-7)
            if level == "token":
                grad = rho * k3 + rho * (1 - math.exp(q - lp))
                assert model_tokens(logprobs.grad)[r][t] == pytest.approx(grad, rel=1e-4, abs=1e-7)
    assert (weighted[MASK == 0] == 0).all() and (logprobs.grad[MASK == 0] == 0).all()
    assert torch.equal(
        weighted.detach(),
        importance_weighted_kl(
            kl_estimate(spread(LOGPROBS), spread(REF), "k3", MASK), spread(LOGPROBS), spread(OLD), MASK, level
        ),
    )
