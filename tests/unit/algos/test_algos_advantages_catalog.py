"""Advantage estimators gdpo, remax, optimal_token_baseline: values worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator
from meshrl.config.algorithm import AlgorithmConfig

ONE_GROUP = torch.zeros(3, dtype=torch.int64)


def test_gdpo_normalises_each_component_then_whitens_the_weighted_sum():
    # r1 = (1, 0, 0): mean ⅓, std √⅓ → (2/√3, −1/√3, −1/√3); r2 = (0, 0, 3): mean 1, std √3
    # → (−1/√3, −1/√3, 2/√3); 1·A1 + 2·A2 = (0, −√3, √3); whitened (var with n − 1 = 3) → (0, −1, 1)
    mask = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    components = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 3.0]])
    result = get_advantage_estimator("gdpo")(
        rewards=components.sum(-1),
        response_mask=mask,
        group_ids=ONE_GROUP,
        eps=1e-12,
        reward_components=components,
        reward_component_weights=torch.tensor([1.0, 2.0]),
    )
    assert_close(result.advantages, torch.tensor([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0]]), atol=1e-6, rtol=0)
    # the batch's weights come as [B, K], the same row everywhere
    per_row = get_advantage_estimator("gdpo")(
        rewards=components.sum(-1),
        response_mask=mask,
        group_ids=ONE_GROUP,
        eps=1e-12,
        reward_components=components,
        reward_component_weights=torch.tensor([[1.0, 2.0]] * 3),
    )
    assert_close(per_row.advantages, result.advantages)
    with pytest.raises(ValueError, match="'gdpo' needs reward_components"):
        get_advantage_estimator("gdpo")(rewards=torch.zeros(3), response_mask=mask, group_ids=ONE_GROUP)


def test_remax_subtracts_the_greedy_reward_from_the_reward_to_go():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    remax = get_advantage_estimator("remax")
    args = dict(
        rewards=torch.tensor([1.0, 0.0]),
        response_mask=mask,
        group_ids=torch.zeros(2, dtype=torch.int64),
        greedy_rewards=torch.tensor([0.5, 0.5]),
    )
    assert_close(remax(**args).advantages, torch.tensor([[0.5, 0.5, 0.0], [-0.5, 0.0, 0.0]]))
    # per-token rewards (0.1, 0.2) on row 0: G = (1.3, 1.2), A = G − 0.5
    dense = remax(**args, token_rewards=torch.tensor([[0.1, 0.2, 0.0], [0.3, 0.0, 0.0]]))
    assert_close(dense.advantages, torch.tensor([[0.8, 0.7, 0.0], [-0.2, 0.0, 0.0]]))
    assert_close(dense.returns, torch.tensor([[1.3, 1.2, 0.0], [0.3, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="'remax' needs greedy_rewards"):
        remax(**{**args, "greedy_rewards": None})


def test_optimal_token_baseline_weights_returns_by_cumulative_path_variance():
    # π_old = ½ on every token: ‖s‖² = 1 − 1 + Σπ² = Σπ²; row 0 Σπ² = ½, row 1 Σπ² = 1.5
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    otb = get_advantage_estimator("optimal_token_baseline")
    args = dict(
        rewards=torch.tensor([1.0, 0.0]),
        response_mask=mask,
        group_ids=torch.zeros(2, dtype=torch.int64),
        old_logprobs=torch.full((2, 2), math.log(0.5)),
        sum_pi_squared=torch.tensor([[0.5, 0.5], [1.5, 1.5]]),
    )
    # G = (1, 1) and (0, ·); W = (0.5, 1.0) and (1.5, ·); B_0 = (1·0.5 + 0·1.5)/2 = ¼;
    # B_1 = 1 (row 0 alone) but row 0's tail beyond length 1 has no peer → B_1 = 0
    result = otb(**args)
    assert_close(result.advantages, torch.tensor([[0.75, 1.0], [-0.25, 0.0]]))
    no_tail = otb(**args, handle_zero_tail=False)
    assert_close(no_tail.advantages, torch.tensor([[0.75, 0.0], [-0.25, 0.0]]))
    with pytest.raises(ValueError, match="needs old_logprobs and sum_pi_squared"):
        otb(**{**args, "sum_pi_squared": None})


@pytest.mark.parametrize(
    "name, needs", [("remax", {"greedy_rewards"}), ("optimal_token_baseline", {"old_logprobs", "sum_pi_squared"})]
)
def test_config_accepts_estimators_whose_declared_inputs_the_mesh_delivers(name, needs):
    assert AlgorithmConfig(advantage_estimator=name).advantage_estimator == name
    assert get_advantage_estimator(name).needs == needs
    assert get_advantage_estimator("grpo").needs == frozenset()
