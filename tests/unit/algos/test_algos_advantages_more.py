"""GRPO's scale_rewards, RLOO's normalisation, OPO, GPG and GRPO pass@k, worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator

# group 0: scores 0, 1, 2 (mean 1, std 1); group 1: 4, 8 (mean 6, std 2√2); group 2: 3, 3
REWARDS = torch.tensor([0.0, 1.0, 2.0, 4.0, 8.0, 3.0, 3.0])
GROUPS = torch.tensor([0, 0, 0, 1, 1, 2, 2])
MASK = torch.tensor(
    [
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 1.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 1.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
    ]
)  # lengths 2,1,3,1,3,1,2


def per_sample(name, **kwargs):
    result = get_advantage_estimator(name)(rewards=REWARDS, response_mask=MASK, group_ids=GROUPS, **kwargs)
    assert_close(result.advantages, result.advantages[:, :1] * MASK)  # one value per sample
    return result.advantages[:, 0]


def test_grpo_scale_rewards_group_batch_none():
    s2 = 2 * math.sqrt(2)
    assert_close(
        per_sample("grpo", scale_rewards="group", eps=0.0), torch.tensor([-1.0, 0.0, 1.0, -2 / s2, 2 / s2, 0.0, 0.0])
    )
    # batch std of 0,1,2,4,8,3,3: mean 3, Σ(x−3)² = 9+4+1+1+25+0+0 = 40, var 40/6
    batch_std = math.sqrt(40 / 6)
    assert_close(
        per_sample("grpo", scale_rewards="batch", eps=0.0),
        torch.tensor([-1.0, 0.0, 1.0, -2.0, 2.0, 0.0, 0.0]) / batch_std,
    )
    assert_close(per_sample("grpo", scale_rewards="none"), torch.tensor([-1.0, 0.0, 1.0, -2.0, 2.0, 0.0, 0.0]))
    # norm_by_std=False wins over scale_rewards
    assert_close(
        per_sample("grpo", scale_rewards="batch", norm_by_std=False),
        torch.tensor([-1.0, 0.0, 1.0, -2.0, 2.0, 0.0, 0.0]),
    )
    with pytest.raises(ValueError, match="scale_rewards='both'"):
        per_sample("grpo", scale_rewards="both")


def test_grpo_eps_is_an_option():
    # group 0 std 1: A = (r − 1) / (1 + 0.5)
    assert per_sample("grpo", eps=0.5)[0].item() == pytest.approx(-1 / 1.5)


def test_rloo_normalised_whitens_the_samples_with_signal():
    # leave-one-out: group 0: 0 − 1.5, 1 − 1, 2 − 0.5; group 1: 4 − 8, 8 − 4; group 2: 0
    raw = torch.tensor([-1.5, 0.0, 1.5, -4.0, 4.0, 0.0, 0.0])
    assert_close(per_sample("rloo"), raw)
    # over the 5 samples with signal: mean 0, var (2.25+0+2.25+16+16)/4 = 9.125
    expected = raw / (math.sqrt(9.125) + 1e-3)
    assert_close(per_sample("rloo", normalize_advantages=True, eps=1e-3), expected)


def test_opo_baseline_is_the_length_weighted_group_mean():
    # group 0: b = (2·0 + 1·1 + 3·2) / 6 = 7/6; group 1: b = (1·4 + 3·8) / 4 = 7
    assert_close(per_sample("opo"), torch.tensor([-7 / 6, -1 / 6, 5 / 6, -3.0, 1.0, 0.0, 0.0]))


def test_gpg_rescales_by_batch_over_samples_with_signal():
    # B = 7, samples with signal 5: α = 7/5; A = α·(r − group mean)
    assert_close(per_sample("gpg"), 1.4 * torch.tensor([-1.0, 0.0, 1.0, -2.0, 2.0, 0.0, 0.0]))


def test_grpo_passk_credits_only_the_best_by_its_margin():
    # group 0: best 2 (index 2) beats 1 by 1, std 1; group 1: best 8 beats 4 by 4, std 2√2;
    # group 2: tie → 0
    assert_close(
        per_sample("grpo_passk", eps=0.0), torch.tensor([0.0, 0.0, 1.0, 0.0, 4 / (2 * math.sqrt(2)), 0.0, 0.0])
    )
    assert_close(per_sample("grpo_passk", norm_by_std=False), torch.tensor([0.0, 0.0, 1.0, 0.0, 4.0, 0.0, 0.0]))


def test_grpo_passk_group_of_one_and_ties_for_best_get_zero():
    out = get_advantage_estimator("grpo_passk")(
        rewards=torch.tensor([5.0, 2.0, 2.0, 1.0]),
        response_mask=torch.ones(4, 1),
        group_ids=torch.tensor([7, 3, 3, 3]),
        norm_by_std=False,
    )
    assert out.advantages[:, 0].tolist() == [0.0, 0.0, 0.0, 0.0]
