"""Estimators that scan over time: gae and reinforce_plus_plus; and `none`."""

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator

ONE_GROUP = torch.tensor([0, 0])


def gae(**kwargs):
    kwargs.setdefault("group_ids", torch.zeros(kwargs["rewards"].shape[0], dtype=torch.long))
    return get_advantage_estimator("gae")(**kwargs)


def test_gae_hand_computed_with_padding():
    # γ = 0.9, λ = 0.5 → γλ = 0.45. Row 0 (3 tokens), reward 1 at t=2, V = (0.5, 0.2, 0.1):
    #   t2: δ = 1 + 0.9·0 − 0.1 = 0.9;        A2 = 0.9
    #   t1: δ = 0 + 0.9·0.1 − 0.2 = −0.11;    A1 = −0.11 + 0.45·0.9 = 0.295
    #   t0: δ = 0 + 0.9·0.2 − 0.5 = −0.32;    A0 = −0.32 + 0.45·0.295 = −0.18725
    #   returns = A + V = (0.31275, 0.495, 1.0)
    # Row 1 (2 tokens + padding), reward −1 at t=1, V = (0.3, 0.4, ·):
    #   t1: δ = −1 − 0.4 = −1.4;               A1 = −1.4
    #   t0: δ = 0.9·0.4 − 0.3 = 0.06;          A0 = 0.06 + 0.45·(−1.4) = −0.57
    #   returns = (−0.27, −1.0, 0)
    values = torch.tensor([[0.5, 0.2, 0.1], [0.3, 0.4, 7.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    result = gae(
        rewards=torch.tensor([1.0, -1.0]),
        response_mask=mask,
        values=values,
        gamma=0.9,
        lam=0.5,
        whiten_advantages=False,
    )
    assert_close(result.advantages, torch.tensor([[-0.18725, 0.295, 0.9], [-0.57, -1.4, 0.0]]))
    assert_close(result.returns, torch.tensor([[0.31275, 0.495, 1.0], [-0.27, -1.0, 0.0]]))


def test_gae_per_token_rewards_and_interior_mask():
    # γ = λ = 1, mask (1, 0, 1): the middle token (e.g. tool output) is skipped.
    # r = token_rewards on valid tokens + reward 1 at the last token = (−0.1, ·, 1 − 0.2)
    #   t2: δ = 0.8 − 0.2 = 0.6; A2 = 0.6; next V = 0.2
    #   t1: masked, carries A = 0.6 and next V = 0.2
    #   t0: δ = −0.1 + 0.2 − 0.5 = −0.4; A0 = −0.4 + 0.6 = 0.2
    result = gae(
        rewards=torch.tensor([1.0]),
        response_mask=torch.tensor([[1.0, 0.0, 1.0]]),
        values=torch.tensor([[0.5, 9.0, 0.2]]),
        token_rewards=torch.tensor([[-0.1, 50.0, -0.2]]),
        whiten_advantages=False,
    )
    assert_close(result.advantages, torch.tensor([[0.2, 0.0, 0.6]]))
    assert_close(result.returns, torch.tensor([[0.7, 0.0, 0.8]]))


def test_gae_single_token_response():
    # one valid token: A = r − V = 2 − 0.5 = 1.5, return = 2
    result = gae(
        rewards=torch.tensor([2.0]),
        response_mask=torch.tensor([[1.0, 0.0, 0.0]]),
        values=torch.tensor([[0.5, 0.1, 0.1]]),
        whiten_advantages=False,
    )
    assert_close(result.advantages, torch.tensor([[1.5, 0.0, 0.0]]))
    assert_close(result.returns, torch.tensor([[2.0, 0.0, 0.0]]))


def test_gae_whitens_advantages_but_not_returns():
    # raw A from the first test: valid values −0.18725, 0.295, 0.9, −0.57, −1.4 (n = 5)
    # mean = −0.96225 / 5 = −0.19245; deviations 0.0052, 0.48745, 1.09245, −0.37755, −1.20755
    # Σ dev² = 0.000027 + 0.237608 + 1.193447 + 0.142544 + 1.458177 = 3.031803
    # var = 3.031803 / 4 = 0.757951, std = 0.870604
    # whitened t0 of row 0: 0.0052 / 0.870604 = 0.005973; row 1 t1: −1.20755 / 0.870604 = −1.387028
    values = torch.tensor([[0.5, 0.2, 0.1], [0.3, 0.4, 7.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    result = gae(rewards=torch.tensor([1.0, -1.0]), response_mask=mask, values=values, gamma=0.9, lam=0.5)
    assert result.advantages[0, 0].item() == pytest.approx(0.005973, abs=1e-5)
    assert result.advantages[1, 1].item() == pytest.approx(-1.387028, abs=1e-5)
    assert result.advantages[1, 2].item() == 0.0
    assert_close(result.returns, torch.tensor([[0.31275, 0.495, 1.0], [-0.27, -1.0, 0.0]]))


def test_gae_needs_values_and_says_so():
    estimator = get_advantage_estimator("gae")
    assert estimator.needs_values is True
    assert get_advantage_estimator("grpo").needs_values is False
    with pytest.raises(ValueError, match="needs `values`"):
        estimator(rewards=torch.ones(2), response_mask=torch.ones(2, 3), group_ids=ONE_GROUP)


def test_gae_detaches_values():
    values = torch.zeros(1, 2, requires_grad=True)
    result = gae(rewards=torch.tensor([1.0]), response_mask=torch.ones(1, 2), values=values)
    assert not result.advantages.requires_grad and not result.returns.requires_grad


def test_reinforce_plus_plus_discounted_return_then_batch_whitening():
    # γ = 0.5. Row 0 (3 tokens), reward 1 at t2 → G = (0.25, 0.5, 1)
    # Row 1 (2 tokens + pad), reward 2 at t1 → G = (1, 2, 0)
    # valid G: 0.25, 0.5, 1, 1, 2 → mean 0.95; deviations −0.7, −0.45, 0.05, 0.05, 1.05
    # Σ dev² = 0.49 + 0.2025 + 0.0025 + 0.0025 + 1.1025 = 1.8; var = 1.8 / 4 = 0.45
    # std = 0.670820 → A = (−1.043498, −0.670820, 0.074536), (0.074536, 1.565248, 0)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    result = get_advantage_estimator("reinforce_plus_plus")(
        rewards=torch.tensor([1.0, 2.0]), response_mask=mask, group_ids=ONE_GROUP, gamma=0.5
    )
    assert_close(result.returns, torch.tensor([[0.25, 0.5, 1.0], [1.0, 2.0, 0.0]]))
    expected = torch.tensor([[-1.043498, -0.670820, 0.074536], [0.074536, 1.565248, 0.0]])
    assert_close(result.advantages, expected, atol=1e-5, rtol=0)


def test_reinforce_plus_plus_with_kl_penalty_tokens():
    # γ = 1, per-token rewards (−0.1, −0.2) + reward 1 at the end → r = (−0.1, 0.8)
    # G = (0.7, 0.8); mean 0.75, var = (0.0025·2) / 1 = 0.005, std 0.0707107 → A = (−0.7071, 0.7071)
    result = get_advantage_estimator("reinforce_plus_plus")(
        rewards=torch.tensor([1.0]),
        response_mask=torch.ones(1, 2),
        group_ids=torch.tensor([0]),
        token_rewards=torch.tensor([[-0.1, -0.2]]),
    )
    assert_close(result.returns, torch.tensor([[0.7, 0.8]]))
    assert_close(result.advantages, torch.tensor([[-0.70711, 0.70711]]), atol=1e-4, rtol=0)


def test_reinforce_plus_plus_skips_masked_tokens_in_the_return():
    # γ = 0.5, mask (1, 0, 1), token rewards 1 on valid tokens: G2 = 1, G1 carried (masked),
    # G0 = 1 + 0.5·1 = 1.5
    result = get_advantage_estimator("reinforce_plus_plus")(
        rewards=torch.tensor([0.0]),
        response_mask=torch.tensor([[1.0, 0.0, 1.0]]),
        group_ids=torch.tensor([0]),
        token_rewards=torch.tensor([[1.0, 100.0, 1.0]]),
        gamma=0.5,
    )
    assert_close(result.returns, torch.tensor([[1.5, 0.0, 1.0]]))


def test_reinforce_plus_plus_equal_returns_give_zero():
    result = get_advantage_estimator("reinforce_plus_plus")(
        rewards=torch.tensor([0.3, 0.3]), response_mask=torch.tensor([[1.0, 0.0], [1.0, 0.0]]), group_ids=ONE_GROUP
    )
    assert torch.equal(result.advantages, torch.zeros(2, 2))


def test_none_estimator_is_zero():
    result = get_advantage_estimator("none")(
        rewards=torch.tensor([1.0, 2.0]), response_mask=torch.ones(2, 3), group_ids=ONE_GROUP
    )
    assert torch.equal(result.advantages, torch.zeros(2, 3))
    assert torch.equal(result.returns, torch.zeros(2, 3))


def test_undiscounted_returns_match_the_scan():
    # γ = 1 takes the reverse-cumsum path; it must equal the general scan (GAE, V = 0, λ = 1)
    from meshrl.algos.advantages.common import discounted_returns, gae_scan

    torch.manual_seed(0)
    rewards = torch.randn(5, 7)
    mask = (torch.rand(5, 7) > 0.3).float()
    expected = gae_scan(rewards, torch.zeros(5, 7), mask, 1.0, 1.0)
    assert_close(discounted_returns(rewards, mask, 1.0), expected)


def test_terminal_reward_lands_on_the_last_token_of_long_bf16_masks():
    # positions 257 and 258 are the same number in bf16; the index must still be exact
    from meshrl.algos.advantages.common import last_token_index

    mask = torch.zeros(2, 300, dtype=torch.bfloat16)
    mask[0, :258] = 1
    mask[1, :1] = 1
    assert last_token_index(mask).tolist() == [257, 0]
