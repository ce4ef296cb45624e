"""The registry (lookup, listing, adding parts by decorator) and the shared input checks."""

import pytest
import torch
from torch.testing import assert_close

import meshrl.algos as algos
from meshrl.algos import (
    AdvantageResult,
    NonFiniteError,
    PolicyLossResult,
    ShapeError,
    UnknownNameError,
    check_finite,
    check_shapes,
    get_advantage_estimator,
    get_policy_loss,
    list_advantage_estimators,
    list_policy_losses,
    register_advantage_estimator,
    register_policy_loss,
)
from meshrl.algos.registry import ADVANTAGE_ESTIMATORS, POLICY_LOSSES

ESTIMATORS = ["dr_grpo", "gae", "grpo", "none", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "rloo"]


def test_builtin_parts_are_registered():
    assert set(ESTIMATORS) <= set(list_advantage_estimators())
    assert {"ppo", "gspo", "cispo"} <= set(list_policy_losses())
    assert get_policy_loss("ppo").default_agg == "token-mean"
    assert get_policy_loss("cispo").default_agg == "token-mean"


def test_unknown_names_raise_key_error_listing_registered_names():
    with pytest.raises(KeyError) as info:
        get_advantage_estimator("ppo_v2")
    assert isinstance(info.value, UnknownNameError)
    message = str(info.value)
    assert "'ppo_v2'" in message and all(name in message for name in ESTIMATORS)
    with pytest.raises(UnknownNameError, match="registered: cispo, clip_cov, "):
        get_policy_loss("dpo")


@pytest.fixture
def scratch_names():
    names = []
    yield names
    for name in names:
        ADVANTAGE_ESTIMATORS.remove(name)
        POLICY_LOSSES.remove(name)


def test_new_estimator_by_decorator_only(scratch_names):
    scratch_names.append("test_max_baseline")

    @register_advantage_estimator("test_max_baseline")
    def max_baseline(*, rewards, response_mask, group_ids, **_):
        """A_i = r_i − max(r) (a toy estimator)."""
        advantages = (rewards - rewards.max()).unsqueeze(-1) * response_mask
        return AdvantageResult(advantages=advantages, returns=advantages)

    estimator = get_advantage_estimator("test_max_baseline")
    assert "test_max_baseline" in list_advantage_estimators()
    assert estimator.needs_values is False and estimator.__doc__.startswith("A_i")
    # the shared signature: extra config keywords are accepted and ignored
    result = estimator(
        rewards=torch.tensor([1.0, 3.0]),
        response_mask=torch.ones(2, 1),
        group_ids=torch.tensor([0, 0]),
        gamma=1.0,
        lam=0.95,
        norm_by_std=True,
    )
    assert_close(result.advantages, torch.tensor([[-2.0], [0.0]]))
    # and it gets the shared checks for free
    with pytest.raises(ShapeError, match="rewards"):
        estimator(rewards=torch.ones(3), response_mask=torch.ones(2, 1), group_ids=torch.zeros(2, dtype=torch.long))


def test_new_policy_loss_by_decorator_only(scratch_names):
    scratch_names.append("test_reinforce")

    @register_policy_loss("test_reinforce", default_agg="seq-mean-token-sum")
    def vanilla(*, logprobs, advantages, response_mask, **_):
        return PolicyLossResult(loss_mat=-advantages * logprobs * response_mask)

    loss = get_policy_loss("test_reinforce")
    assert loss.default_agg == "seq-mean-token-sum"
    result = loss(
        logprobs=torch.tensor([[-1.0]]),
        old_logprobs=torch.tensor([[-1.0]]),
        advantages=torch.tensor([[2.0]]),
        response_mask=torch.ones(1, 1),
        epsilon=0.2,
    )
    assert result.loss_mat.item() == 2.0  # −2 · (−1)


def test_registration_errors(scratch_names):
    with pytest.raises(ValueError, match="already registered"):
        register_advantage_estimator("grpo")(lambda **_: None)
    with pytest.raises(ValueError, match="default_agg"):
        register_policy_loss("test_bad", default_agg="mean")


@pytest.mark.parametrize("name", ESTIMATORS)
def test_every_estimator_takes_the_shared_signature_and_zeroes_padding(name):
    torch.manual_seed(1)
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    result = get_advantage_estimator(name)(
        rewards=torch.tensor([1.0, 0.0, 0.5, 2.0]),
        response_mask=mask,
        group_ids=torch.tensor([0, 0, 1, 1]),
        values=torch.randn(4, 3),
        token_rewards=torch.randn(4, 3) * 0.1,
        gamma=0.9,
        lam=0.95,
        norm_by_std=True,
        eps=1e-6,
        step=3,
        some_future_option="ignored",
    )
    assert result.advantages.shape == result.returns.shape == (4, 3)
    assert torch.equal(result.advantages * (1 - mask), torch.zeros(4, 3))
    assert torch.equal(result.returns * (1 - mask), torch.zeros(4, 3))


def test_check_finite_names_tensor_step_and_groups():
    rewards = torch.tensor([1.0, float("nan"), 0.0, float("inf")])
    with pytest.raises(NonFiniteError) as info:
        check_finite("rewards", rewards, group_ids=torch.tensor([10, 11, 12, 13]), step=7)
    error = info.value
    assert error.rows == [1, 3] and error.group_ids == [11, 13] and error.step == 7
    assert "rewards" in str(error) and "step 7" in str(error) and "[11, 13]" in str(error)
    check_finite("fine", torch.ones(3))  # no error


def test_nan_reward_in_an_estimator_names_the_group():
    with pytest.raises(NonFiniteError, match=r"rewards.*step 5.*group ids \[42\]"):
        get_advantage_estimator("grpo")(
            rewards=torch.tensor([1.0, float("nan")]),
            response_mask=torch.ones(2, 2),
            group_ids=torch.tensor([41, 42]),
            step=5,
        )


def test_nan_logprob_in_a_loss_names_the_group():
    logprobs = torch.tensor([[0.0, 0.0], [float("nan"), 0.0]])
    with pytest.raises(NonFiniteError, match=r"logprobs.*rows \[1\].*group ids \[8\]"):
        get_policy_loss("ppo")(
            logprobs=logprobs,
            old_logprobs=torch.zeros(2, 2),
            advantages=torch.ones(2, 2),
            response_mask=torch.ones(2, 2),
            group_ids=torch.tensor([7, 8]),
        )


def test_check_shapes_names_the_mismatch():
    with pytest.raises(ShapeError) as info:
        check_shapes(rewards=(torch.ones(3), "B"), response_mask=(torch.ones(4, 5), "B T"))
    message = str(info.value)
    assert "response_mask" in message and "(3,)" in message and "(4, 5)" in message
    with pytest.raises(ShapeError, match="old_logprobs"):
        check_shapes(logprobs=torch.ones(2, 3), old_logprobs=torch.ones(2, 4))
    check_shapes(logprobs=torch.ones(2, 3), values=None)  # optional inputs are skipped


def test_bad_masks_and_group_ids_are_rejected():
    estimator = get_advantage_estimator("grpo")
    with pytest.raises(ValueError, match="0.0 and 1.0"):
        estimator(rewards=torch.ones(2), response_mask=torch.full((2, 2), 0.5), group_ids=torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="float 0/1"):
        estimator(
            rewards=torch.ones(2), response_mask=torch.ones(2, 2, dtype=torch.bool), group_ids=torch.tensor([0, 0])
        )
    with pytest.raises(ValueError, match="int64"):
        estimator(rewards=torch.ones(2), response_mask=torch.ones(2, 2), group_ids=torch.zeros(2))


def test_public_api_is_exported():
    for name in algos.__all__:
        assert hasattr(algos, name), name
