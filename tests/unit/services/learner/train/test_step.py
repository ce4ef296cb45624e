"""TrainStep on a tiny Llama: old log-probs, split invariance, KL paths, critic, NaN guard."""

import pytest
import torch

from meshrl.algos import NonFiniteError
from meshrl.algos.logprobs import response_logprobs
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.critic import ValueModel, build_critic
from meshrl.services.learner.train.metrics import MetricSums, Timer
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch, weights_of

GRPO = dict(
    advantage_estimator="grpo",
    policy_loss="ppo",
    loss_agg_mode="seq-mean-token-mean",
    kl_coef=0.04,
    kl_in="loss",
    entropy_coeff=0.01,
)


def make_step(micro_batch_size=4, critic=False, **algo):
    trainer = TrainerConfig(
        micro_batch_size=micro_batch_size, ppo_epochs=2, mini_batches=1, optim={"lr": 1e-3, "max_grad_norm": 0.5}
    )
    algo = {**GRPO, **algo}
    # the config enables a critic only for an estimator that uses values (it refuses the rest)
    uses_values = critic and algo["advantage_estimator"] == "gae"
    algo_cfg = AlgorithmConfig(**algo, critic={"enabled": uses_values})
    model = build_tiny_llama()
    policy = build_policy(model, trainer, total_steps=10)
    critic_model = None
    if critic:
        critic_model = build_critic(ValueModel.from_causal_lm(model), algo_cfg.critic, trainer, total_steps=10)
    return TrainStep(policy, algo_cfg, trainer, critic=critic_model)


def test_old_logprobs_are_the_logprobs_at_step_start():
    step, batch = make_step(micro_batch_size=3), random_batch()
    with torch.no_grad():
        expected = response_logprobs(step.policy.model, batch).logprobs
    prepared = step.prepare(batch, 0, Timer(torch.device("cpu")), MetricSums())
    torch.testing.assert_close(prepared.old_logprobs, expected, atol=1e-6, rtol=0)
    assert (prepared.old_logprobs[batch.response_mask == 0] == 0).all()
    # the first forward of the update sees ratio = 1 exactly: nothing is clipped
    metrics = make_step()(batch, 0)
    assert metrics["ratio/max"] >= 1.0 and metrics["approx_kl"] >= 0.0


@pytest.mark.parametrize("agg", ["seq-mean-token-mean", "token-mean"])
def test_same_update_for_micro_batch_sizes_1_2_4(agg):
    runs = {}
    for size in (1, 2, 4):
        step = make_step(micro_batch_size=size, loss_agg_mode=agg)
        metrics = step(random_batch(), 0)
        runs[size] = (metrics, weights_of(step.policy.model))
    for size in (2, 4):
        assert runs[size][0]["loss"] == pytest.approx(runs[1][0]["loss"], abs=1e-5)
        assert runs[size][0]["grad_norm"] == pytest.approx(runs[1][0]["grad_norm"], rel=1e-5)
        for name, tensor in runs[size][1].items():
            torch.testing.assert_close(tensor, runs[1][1][name], atol=1e-5, rtol=0, msg=name)
    assert runs[1][0]["grad_norm"] > 0.5  # clipping was active (max_grad_norm 0.5)


def test_weights_change_and_metrics_have_trl_names():
    step = make_step()
    before = weights_of(step.policy.model)
    metrics = step(random_batch(), 0)
    after = weights_of(step.policy.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)
    for name in (
        "loss",
        "pg_loss",
        "kl",
        "entropy",
        "clip_ratio/low",
        "clip_ratio/high",
        "clip_ratio/dual",
        "approx_kl",
        "grad_norm",
        "lr",
        "mismatch_kl",
        "reward",
        "reward_std",
        "frac_reward_zero_std",
        "completions/mean_length",
        "time/forward",
        "time/backward",
        "time/optimizer",
        "time/algo",
    ):
        assert name in metrics, name
    assert metrics["lr"] == pytest.approx(1e-3)
    assert step.policy.lr < 1e-3  # the scheduler stepped once


def test_kl_as_reward_changes_advantages_kl_as_loss_does_not():
    batch = random_batch()
    timer, sums = Timer(torch.device("cpu")), MetricSums()
    plain = make_step(kl_coef=0.0).prepare(batch, 0, timer, sums).advantages
    as_loss = make_step(kl_in="loss", kl_coef=0.5).prepare(batch, 0, timer, sums).advantages
    as_reward = make_step(kl_in="reward", kl_coef=0.5).prepare(batch, 0, timer, sums).advantages
    torch.testing.assert_close(as_loss, plain)
    assert not torch.allclose(as_reward, plain)
    for kl_in in ("loss", "reward"):
        metrics = make_step(kl_in=kl_in, kl_coef=0.5)(batch, 0)
        assert metrics["kl"] > 0 and torch.isfinite(torch.tensor(metrics["loss"]))


def test_kl_without_reference_logprobs_is_an_error():
    with pytest.raises(ValueError, match="kl_coef=0.04 needs batch.ref_logprobs"):
        make_step()(random_batch(with_ref=False), 0)


def test_gae_runs_the_critic_and_updates_the_value_head():
    step = make_step(critic=True, advantage_estimator="gae", kl_in="reward", lam=0.95, loss_agg_mode="token-mean")
    head = step.critic.model.value_head.weight.detach().clone()
    metrics = step(random_batch(), 0)
    assert not torch.equal(head, step.critic.model.value_head.weight)
    assert metrics["critic/vf_loss"] > 0 and "critic/grad_norm" in metrics
    with pytest.raises(ValueError, match="needs a critic"):
        make_step(critic=False, advantage_estimator="gae")


def test_grpo_does_not_run_a_critic_even_if_given():
    assert make_step(critic=True).critic is None  # the estimator says needs_values=False


def test_nan_reward_names_step_and_group_and_trains_nothing():
    step, batch = make_step(), random_batch()
    batch.rewards[5] = float("nan")  # row 5 is in group 101
    before = weights_of(step.policy.model)
    with pytest.raises(NonFiniteError, match=r"rewards .* at step 7: rows \[5\], group ids \[101\]"):
        step(batch, 7)
    after = weights_of(step.policy.model)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_bf16_autocast_and_gradient_checkpointing_paths_train():
    batch = random_batch()
    reference = make_step()(batch, 0)
    for options in ({"bf16": True}, {"gradient_checkpointing": True}):
        trainer = TrainerConfig(micro_batch_size=4, ppo_epochs=2, optim={"lr": 1e-3, "max_grad_norm": 0.5}, **options)
        policy = build_policy(build_tiny_llama(), trainer, total_steps=10)
        metrics = TrainStep(policy, AlgorithmConfig(**GRPO), trainer)(batch, 0)
        tolerance = 2e-2 if options.get("bf16") else 1e-6
        assert abs(metrics["loss"] - reference["loss"]) < tolerance, (options, metrics["loss"])
        assert abs(metrics["entropy"] - reference["entropy"]) < 50 * tolerance


def test_nan_behaviour_logprob_names_its_group():
    batch = random_batch()
    batch.behaviour_logprobs[2, 0] = float("inf")  # row 2 is in group 100
    with pytest.raises(NonFiniteError, match=r"behaviour_logprobs .* at step 3: rows \[2\], group ids \[100\]"):
        make_step()(batch, 3)
