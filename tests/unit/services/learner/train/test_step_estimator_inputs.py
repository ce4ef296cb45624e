"""The training step gives an estimator the extra inputs it declares (`needs=`), never by name:
ReMax's greedy rewards from the batch, the optimal-token baseline's π_old and Σπ² from the
old-log-prob pass (which then runs even where it could be skipped)."""

import dataclasses

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator
from meshrl.algos.logprobs import response_stats
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.config.load import load_config
from meshrl.services.learner.feeder import PromptFeeder
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.test_feeder_draws import FakeDataset
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch


def train_step(estimator: str, **trainer) -> TrainStep:
    cfg = TrainerConfig(micro_batch_size=3, optim={"lr": 1e-3}, **trainer)
    policy = build_policy(build_tiny_llama(), cfg, total_steps=10)
    algo = AlgorithmConfig(advantage_estimator=estimator, policy_loss="ppo", kl_coef=0.0)
    return TrainStep(policy, algo, cfg, max_staleness=0)


def prepare(step: TrainStep, batch):
    return step.prepare(batch, 0, Timer(step.dist.device), MetricSums())


def test_remax_gets_each_rows_greedy_reward_from_the_batch():
    batch = random_batch(n=8, group_size=4, seed=3)  # groups 100 (rows 0-3) and 101 (rows 4-7)
    greedy = torch.tensor([0.25] * 4 + [0.75] * 4)
    step = train_step("remax")
    assert step.old_source == "current"  # ReMax needs no π_old: the pass stays skipped
    prepared = prepare(step, dataclasses.replace(batch, greedy_rewards=greedy))
    # outcome reward only: A_t = r − r_greedy on every response token
    expected = (batch.rewards - greedy).unsqueeze(-1) * batch.response_mask
    assert_close(prepared.advantages, expected)
    metrics = step(dataclasses.replace(batch, greedy_rewards=greedy), 0)
    assert torch.isfinite(torch.tensor(metrics["loss"]))
    assert metrics["reward_greedy"] == pytest.approx(0.5)  # (4·0.25 + 4·0.75) / 8
    with pytest.raises(ValueError, match="'remax' needs greedy_rewards"):
        prepare(train_step("remax"), batch)  # the rollout sent no greedy samples


def test_optimal_token_baseline_gets_old_logprobs_and_sum_pi_squared_from_the_old_pass():
    batch = random_batch(n=8, group_size=4, seed=4)
    step = train_step("optimal_token_baseline")
    assert step.old_source == "recompute"  # forced: the estimator needs π_old before the forward
    with torch.no_grad():
        stats = response_stats(step.policy.model, batch, with_sum_pi_squared=True)
    prepared = prepare(step, batch)
    # the rollout correction's token weights (mode token, cap 2) scale W by ρ̄², as verl's
    weights = torch.exp(stats.logprobs - batch.behaviour_logprobs).clamp(max=2.0) * batch.loss_mask
    expected = get_advantage_estimator("optimal_token_baseline")(
        rewards=batch.rewards,
        response_mask=batch.response_mask,
        group_ids=batch.group_ids,
        old_logprobs=stats.logprobs,
        sum_pi_squared=stats.sum_pi_squared,
        rollout_weights=weights,
    )
    assert_close(prepared.old_logprobs, stats.logprobs, atol=1e-6, rtol=0)
    assert_close(prepared.advantages, expected.advantages, atol=1e-6, rtol=0)
    assert torch.isfinite(torch.tensor(step(batch, 0)["loss"]))


def test_optimal_token_baseline_refuses_the_rollouts_logprobs_as_old():
    with pytest.raises(ValueError, match="needs Σπ² from the learner's old-log-prob pass"):
        train_step("optimal_token_baseline", old_logprobs="rollout")


@pytest.mark.parametrize("estimator, greedy", [("remax", True), ("grpo", False), ("optimal_token_baseline", False)])
def test_the_feeder_asks_for_a_greedy_sample_only_when_the_estimator_needs_one(estimator, greedy):
    cfg = load_config(
        base={"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"advantage_estimator": estimator}}
    )
    feeder = PromptFeeder(None, FakeDataset(), cfg, "run1")
    task = feeder.make_task(feeder.take_draw())
    assert task.sampling.greedy_baseline is greedy
