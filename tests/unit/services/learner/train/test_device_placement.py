"""No tensor of a training step is made on the wrong device (the class of bug that made every
`TrainStep` call fail on CUDA at metrics.py's `torch.stack`): each step runs with torch's
default device set to `meta` while the model and batch live on `cpu`
(`tests.fixtures.device_trap`), so a tensor made without `device=` cannot combine with the
model's. Every path: the old-log-prob pass or its shortcut, KL in reward (adaptive) and in
loss, rollout correction, the three forwards, the critic, Σπ², DPO."""

import dataclasses

import pytest
import torch

from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.config.parts import ADVANTAGE_ESTIMATORS, DPO_LOSS_TYPES, KL_ESTIMATORS, LOSS_AGG_MODES, POLICY_LOSSES
from meshrl.services.learner.train.critic import ValueModel, build_critic
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.fixtures.device_trap import default_device_elsewhere
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch, weights_of
from tests.unit.services.learner.train.test_dpo import make as make_dpo
from tests.unit.services.learner.train.test_dpo import pairs, with_reference

GRPO = dict(
    advantage_estimator="grpo",
    policy_loss="ppo",
    loss_agg_mode="seq-mean-token-mean",
    kl_coef=0.04,
    kl_in="loss",
    entropy_coeff=0.01,
)


def build_step(algo: dict, critic: bool = False, max_staleness: int | None = None, **trainer) -> TrainStep:
    cfg = TrainerConfig(micro_batch_size=3, optim={"lr": 1e-3}, **trainer)
    algo_cfg = AlgorithmConfig(**algo, critic={"enabled": critic})
    model = build_tiny_llama()
    critic_model = (
        build_critic(ValueModel.from_causal_lm(model), algo_cfg.critic, cfg, total_steps=10) if critic else None
    )
    return TrainStep(
        build_policy(model, cfg, total_steps=10), algo_cfg, cfg, critic=critic_model, max_staleness=max_staleness
    )


def assert_steps_off_the_default_device(step: TrainStep, batch=None) -> dict[str, float]:
    batch, before = batch or random_batch(), weights_of(step.policy.model)
    with default_device_elsewhere():
        metrics = step(batch, 0)
    after = weights_of(step.policy.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)  # it really trained
    assert all(torch.isfinite(torch.tensor(v)) for v in metrics.values()), metrics
    return metrics


@pytest.mark.parametrize("forward", ["padded", "shared_prefix", "packed"])
def test_grpo_recomputed_old_logprobs_kl_in_loss(forward):
    metrics = assert_steps_off_the_default_device(build_step(GRPO, ppo_epochs=2, forward=forward))
    assert metrics["kl"] > 0 and metrics["entropy"] > 0


def test_grpo_adaptive_kl_in_reward_with_rollout_correction():
    algo = {
        **GRPO,
        "kl_in": "reward",
        "kl_ctrl": "adaptive",
        "kl_coef": 0.05,
        "rollout_correction": {"mode": "sequence", "cap": 2.0},
    }
    metrics = assert_steps_off_the_default_device(build_step(algo))
    assert metrics["kl_coef"] == pytest.approx(0.05)


def test_grpo_on_policy_shortcut_and_rollout_old_logprobs():
    assert build_step(GRPO, max_staleness=0).old_source == "current"
    assert_steps_off_the_default_device(build_step(GRPO, max_staleness=0))
    assert_steps_off_the_default_device(build_step(GRPO, old_logprobs="rollout"))


@pytest.mark.parametrize("forward", ["padded", "packed"])
def test_ppo_with_critic(forward):
    algo = {**GRPO, "advantage_estimator": "gae", "kl_coef": 0.0}
    metrics = assert_steps_off_the_default_device(build_step(algo, critic=True, mini_batches=2, forward=forward))
    assert "critic/vf_loss" in metrics and "critic/grad_norm" in metrics


@pytest.mark.parametrize("estimator", [n for n, values in ADVANTAGE_ESTIMATORS.items() if not values])
def test_every_advantage_estimator(estimator):
    """optimal_token_baseline: the Σπ² pass; remax: the batch's greedy rewards; gdpo and
    normalize_then_sum: reward components; none (zero advantages): the entropy bonus alone moves the weights."""
    batch = random_batch()
    n = batch.batch_size
    components = {"reward_components": torch.rand(n, 2), "reward_component_weights": torch.ones(n, 2)}
    extra = {"remax": {"greedy_rewards": torch.full((n,), 0.5)}, "gdpo": components, "normalize_then_sum": components}
    batch = dataclasses.replace(batch, **extra.get(estimator, {}))
    algo = {"advantage_estimator": estimator, "policy_loss": "ppo", "kl_coef": 0.0, "entropy_coeff": 0.01}
    assert_steps_off_the_default_device(build_step(algo), batch)


@pytest.mark.parametrize("loss", sorted(POLICY_LOSSES))
def test_every_policy_loss(loss):
    assert_steps_off_the_default_device(build_step({**GRPO, "policy_loss": loss}))


@pytest.mark.parametrize("kl", KL_ESTIMATORS)
def test_every_kl_estimator(kl):
    assert_steps_off_the_default_device(build_step({**GRPO, "kl_estimator": kl}))


@pytest.mark.parametrize("agg", LOSS_AGG_MODES)
def test_every_loss_aggregation(agg):
    step = build_step({**GRPO, "loss_agg_mode": agg})
    step.max_response_len = 8  # seq-mean-token-sum-norm's constant
    assert_steps_off_the_default_device(step)


@pytest.mark.parametrize("loss_type", DPO_LOSS_TYPES)
def test_dpo_step(loss_type):
    step = make_dpo()
    step.algo = AlgorithmConfig(name="dpo", policy_loss="dpo", offline=True, beta=0.5, dpo_loss_type=loss_type)
    batch = with_reference(step, pairs())
    with default_device_elsewhere():
        metrics = step(batch, 0)
    assert torch.isfinite(torch.tensor(metrics["loss"]))
