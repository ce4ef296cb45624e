"""PF-PPO's reweighting methods and draw, by hand and beside verl 0.9.1's own
(`compute_pf_ppo_reweight_data`, copied in library_reference.py)."""

import pytest
import torch

from meshrl.algos.resampling import pf_ppo_rows
from meshrl.algos.resampling.registry import REWEIGHTINGS
from tests.unit.algos import library_reference as ref

SCORES = torch.tensor([1.0, -2.0, 0.0, 3.0, 0.5, 3.0, -2.0, 1.0])

# method → (options, weights by hand)
HAND = {
    "pow": ({"weight_pow": 2.0}, [1.0, 4.0, 0.0, 9.0, 0.25, 9.0, 4.0, 1.0]),
    "max_min": ({}, [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0]),  # max 3 (twice), min −2 (twice)
    "max_random": ({}, [0.1, 0.1, 0.1, 0.4, 0.1, 0.4, 0.1, 0.1]),
}


def test_every_registered_method_has_a_case():
    assert sorted(HAND) == REWEIGHTINGS.names()


@pytest.mark.parametrize("method", sorted(HAND))
def test_method_weights_by_hand_and_the_draw_is_verls(method):
    options, hand = HAND[method]
    assert REWEIGHTINGS.get(method)(SCORES, **options).tolist() == pytest.approx(hand)
    ours = pf_ppo_rows(SCORES, method, torch.Generator().manual_seed(3), **options)
    verl = ref.verl_pf_ppo_rows(
        SCORES, method, options.get("weight_pow", 2.0), generator=torch.Generator().manual_seed(3)
    )
    assert torch.equal(ours, verl)
    # only rows with weight can be drawn (1e-8 for the others: none in 8 draws here)
    assert all(hand[i] > 0 for i in ours.tolist())


def test_pow_draws_high_reward_magnitudes_more_often():
    counts = (
        torch.bincount(pf_ppo_rows(SCORES.repeat(50), "pow", torch.Generator().manual_seed(0)), minlength=400)
        .view(50, 8)
        .sum(0)
    )
    # probabilities ∝ 1, 4, 0, 9, 0.25, 9, 4, 1 (sum 28.25) over 400 draws
    assert counts[2] == 0 and counts[3] > counts[1] > counts[0] > counts[4]
    with pytest.raises(KeyError, match="unknown PF-PPO reweighting 'powe'"):
        pf_ppo_rows(SCORES, "powe")
