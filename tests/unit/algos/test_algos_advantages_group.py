"""Group-relative outcome estimators: grpo, dr_grpo, rloo, reinforce_plus_plus_baseline.

Numbers are worked by hand in the comments; std is Bessel-corrected (n − 1).
"""

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator

# Three groups: id 10 = [1, 0]; id 3 = [0.3, 0.3, 0.3] (all equal); id 5 = [2, 4, 0].
REWARDS = torch.tensor([1.0, 0.0, 0.3, 0.3, 0.3, 2.0, 4.0, 0.0])
GROUPS = torch.tensor([10, 10, 3, 3, 3, 5, 5, 5])
# lengths 2, 3, 1, 3, 2, 3, 1, 2 (padding to 3)
LENGTHS = torch.tensor([2, 3, 1, 3, 2, 3, 1, 2])
MASK = (torch.arange(3) < LENGTHS.unsqueeze(-1)).float()


def run(name, **kwargs):
    args = dict(rewards=REWARDS, response_mask=MASK, group_ids=GROUPS)
    args.update(kwargs)
    return get_advantage_estimator(name)(**args)


def per_sequence(advantages):
    """The advantage of each sequence (its first token), checking it is constant on valid tokens."""
    first = advantages[:, 0]
    assert_close(advantages, first.unsqueeze(-1) * MASK)
    return first


def test_grpo_normalised_by_group_std():
    # id 10: mean 0.5, std = sqrt((0.25 + 0.25) / 1) = 0.70711 → ±0.5 / 0.70711 = ±0.70711
    # id 3: all equal → exactly 0
    # id 5: mean 2, deviations (0, 2, −2), var = (0 + 4 + 4) / 2 = 4, std 2 → (0, 1, −1)
    result = run("grpo", norm_by_std=True)
    expected = torch.tensor([0.70711, -0.70711, 0, 0, 0, 0.0, 1.0, -1.0])
    assert_close(per_sequence(result.advantages), expected, atol=1e-5, rtol=0)
    assert torch.equal(result.advantages[2:5], torch.zeros(3, 3))
    assert_close(result.returns, result.advantages)


def test_grpo_without_std_and_dr_grpo_subtract_the_mean_only():
    # id 10: ±0.5; id 3: 0; id 5: (0, 2, −2)
    expected = torch.tensor([0.5, -0.5, 0, 0, 0, 0.0, 2.0, -2.0])
    assert_close(per_sequence(run("grpo", norm_by_std=False).advantages), expected)
    # dr_grpo never divides, whatever norm_by_std says
    assert_close(per_sequence(run("dr_grpo", norm_by_std=True).advantages), expected)


def test_grpo_adds_token_rewards_to_the_score():
    # scores: 0 + (0.5 + 0.5) = 1 and 0 + (0 − 1) = −1 → mean 0, std sqrt(2) → ±1/sqrt(2)
    result = get_advantage_estimator("grpo")(
        rewards=torch.zeros(2),
        response_mask=torch.ones(2, 2),
        group_ids=torch.tensor([0, 0]),
        token_rewards=torch.tensor([[0.5, 0.5], [0.0, -1.0]]),
    )
    assert_close(result.advantages, torch.tensor([[0.70711, 0.70711], [-0.70711, -0.70711]]), atol=1e-5, rtol=0)


def test_rloo_leave_one_out_baseline():
    # id 10 = [1, 0]: 1 − 0 = 1, 0 − 1 = −1
    # id 5 = [2, 4, 0]: 2 − (4+0)/2 = 0, 4 − (2+0)/2 = 3, 0 − (2+4)/2 = −3
    expected = torch.tensor([1.0, -1.0, 0, 0, 0, 0.0, 3.0, -3.0])
    result = run("rloo")
    assert_close(per_sequence(result.advantages), expected)
    assert torch.equal(result.advantages[2:5], torch.zeros(3, 3))


def test_rloo_group_of_one_is_zero():
    result = get_advantage_estimator("rloo")(
        rewards=torch.tensor([5.0, 1.0, 0.0]), response_mask=torch.ones(3, 2), group_ids=torch.tensor([0, 1, 1])
    )
    # id 0 has one sample: nothing to compare with → 0; id 1: ±1
    assert_close(result.advantages, torch.tensor([[0.0, 0.0], [1.0, 1.0], [-1.0, -1.0]]))


def test_reinforce_plus_plus_baseline_centres_per_group_then_whitens_the_batch():
    # groups 0 = [1, 0] → centred (0.5, −0.5); group 1 = [3, 3] → 0, 0.
    # mask lengths 2, 1, 2, 1 → valid token values: 0.5, 0.5, −0.5, 0, 0, 0  (n = 6)
    # mean = 0.5 / 6 = 0.083333; deviations 0.416667 (×2), −0.583333, −0.083333 (×3)
    # Σ dev² = 2·0.173611 + 0.340278 + 3·0.006944 = 0.708333; var = 0.708333 / 5 = 0.141667
    # std = 0.376386 → row 0: 0.416667 / 0.376386 = 1.107019; row 1: −0.583333 / 0.376386
    # = −1.549826; group 1 carries no signal and stays exactly 0.
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 0.0]])
    result = get_advantage_estimator("reinforce_plus_plus_baseline")(
        rewards=torch.tensor([1.0, 0.0, 3.0, 3.0]), response_mask=mask, group_ids=torch.tensor([0, 0, 1, 1])
    )
    expected = torch.tensor([[1.107019, 1.107019], [-1.549826, 0.0], [0.0, 0.0], [0.0, 0.0]])
    assert_close(result.advantages, expected, atol=1e-5, rtol=0)
    assert torch.equal(result.advantages[2:], torch.zeros(2, 2))


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "reinforce_plus_plus_baseline"])
@pytest.mark.parametrize("norm_by_std", [True, False])
def test_all_equal_groups_give_exact_zero_never_nan(name, norm_by_std):
    # 0.1 · 3 / 3 is not exactly 0.1 in floating point; the result must still be exactly 0.
    rewards = torch.tensor([0.1, 0.1, 0.1, 7.0, 0.7, 0.7])
    group_ids = torch.tensor([4, 4, 4, 9, 2, 2])  # a group of three, of one, of two
    result = get_advantage_estimator(name)(
        rewards=rewards, response_mask=torch.ones(6, 3), group_ids=group_ids, norm_by_std=norm_by_std
    )
    assert torch.equal(result.advantages, torch.zeros(6, 3))
    assert torch.isfinite(result.returns).all()


def test_group_ids_need_not_be_contiguous_or_sorted():
    # the same groups as REWARDS/GROUPS, relabelled with large ids and shuffled order
    order = torch.tensor([5, 0, 7, 2, 1, 6, 3, 4])
    relabel = {10: 123456789, 3: -4, 5: 2**40}
    shuffled_groups = torch.tensor([relabel[int(g)] for g in GROUPS[order]])
    result = get_advantage_estimator("grpo")(
        rewards=REWARDS[order], response_mask=MASK[order], group_ids=shuffled_groups
    )
    assert_close(result.advantages, run("grpo").advantages[order])
