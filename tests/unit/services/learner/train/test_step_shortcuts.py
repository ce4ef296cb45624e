"""The learner's shortcuts equal the unoptimised step: skipped old log-probs, forward paths.

Each test runs one full TrainStep twice on the same tiny Llama and batch — once with the
shortcut, once without — and compares loss, grad norm, metrics and the updated weights
(to 1e-5). Also: the skip switches itself off where its condition fails, and the rollout
engine's log-probs can stand in for π_old.
"""

import numpy as np
import pytest
import torch

from meshrl.algos.batch import RolloutBatch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep, old_logprobs_source
from tests.unit.services.learner.train.helpers import VOCAB, build_tiny_llama, random_batch, weights_of

GRPO = dict(
    advantage_estimator="grpo",
    policy_loss="ppo",
    loss_agg_mode="seq-mean-token-mean",
    kl_coef=0.04,
    kl_in="loss",
    entropy_coeff=0.01,
)


def grouped_batch(groups: int = 2, size: int = 4, seed: int = 1) -> RolloutBatch:
    """GRPO-shaped: every row of a group shares one prompt; ragged prompts and responses."""
    rng = np.random.default_rng(seed)
    prompts = [p for p in (rng.integers(1, VOCAB, rng.integers(3, 7)) for _ in range(groups)) for _ in range(size)]
    responses = [rng.integers(1, VOCAB, rng.integers(1, 7)) for _ in range(groups * size)]
    noisy = lambda base: [base + 0.1 * rng.standard_normal(len(r)) for r in responses]  # noqa: E731
    return RolloutBatch.from_sequences(
        prompts,
        responses,
        rewards=rng.random(groups * size),
        group_ids=np.arange(groups * size) // size,
        pad_id=0,
        ref_logprobs=noisy(-4.2),
        behaviour_logprobs=noisy(-4.1),
    )


def run_step(batch, *, max_staleness=0, micro_batch_size=3, algo=None, **trainer):
    cfg = TrainerConfig(micro_batch_size=micro_batch_size, optim={"lr": 1e-3, "max_grad_norm": 0.5}, **trainer)
    policy = build_policy(build_tiny_llama(), cfg, total_steps=10)
    step = TrainStep(policy, AlgorithmConfig(**{**GRPO, **(algo or {})}), cfg, max_staleness=max_staleness)
    return step, step(batch, 0), weights_of(policy.model)


def assert_same_step(a, b, metric_names):
    (_, ma, wa), (_, mb, wb) = a, b
    for name in metric_names:
        assert ma[name] == pytest.approx(mb[name], abs=1e-5), name
    # AdamW moves every weight by up to lr = 1e-3 per step whatever its gradient's size, so a
    # gradient near zero computed in another summation order (eager vs SDPA, packed vs padded,
    # one thread vs two) can move one weight a little differently: 5 % of a step is the bound,
    # a real difference between the paths moves many weights by whole steps.
    for name, tensor in wa.items():
        torch.testing.assert_close(tensor, wb[name], atol=5e-5, rtol=0, msg=name)


METRICS = [
    "loss",
    "pg_loss",
    "grad_norm",
    "kl",
    "entropy",
    "rollout_correction/weight/mean",
    "mismatch_kl",
    "ratio/max",
]


def test_skipped_old_logprobs_equal_computed_ones():
    batch = grouped_batch()
    skipped = run_step(batch, old_logprobs="auto")
    computed = run_step(batch, old_logprobs="recompute")
    assert skipped[0].old_source == "current" and computed[0].old_source == "recompute"
    assert_same_step(skipped, computed, METRICS)
    assert skipped[1]["ratio/max"] == pytest.approx(1.0, abs=1e-6)  # old = current: ratio 1


@pytest.mark.parametrize("forward", ["shared_prefix", "packed"])
def test_forward_paths_equal_padded(forward):
    batch = grouped_batch()
    fast = run_step(batch, forward=forward, old_logprobs="recompute", ppo_epochs=2)
    padded = run_step(batch, forward="padded", old_logprobs="recompute", ppo_epochs=2)
    assert_same_step(fast, padded, METRICS)
    if forward == "packed":  # attention auto: the packed row attends per sequence, no N×N mask
        assert fast[0].policy.model.config._attn_implementation == "meshrl_varlen"


@pytest.mark.parametrize("forward", ["padded", "shared_prefix", "packed"])
def test_eager_attention_equals_sdpa(forward):
    # trainer.attention=auto picks eager on CPU (faster backward); the step must not change
    batch = grouped_batch()
    eager = run_step(batch, forward=forward, old_logprobs="recompute", ppo_epochs=2, attention="eager")
    sdpa = run_step(batch, forward=forward, old_logprobs="recompute", ppo_epochs=2, attention="sdpa")
    assert eager[0].policy.model.config._attn_implementation == "eager"
    assert sdpa[0].policy.model.config._attn_implementation == "sdpa"
    assert_same_step(eager, sdpa, METRICS)


def test_attention_auto_is_eager_on_cpu_the_models_own_on_cuda_varlen_when_packed():
    from meshrl.services.learner.train.policy import attention_for, set_attention

    assert attention_for("auto", "cpu") == "eager" and attention_for("auto", "cuda") is None
    assert attention_for("auto", "cpu", "packed") == attention_for("auto", "cuda", "packed") == "varlen"
    assert attention_for("sdpa", "cpu") == "sdpa"
    plain = torch.nn.Linear(2, 2)
    set_attention(plain, "auto", "cpu")  # not a transformers model: left alone
    with pytest.raises(ValueError, match="trainer.attention='eager'.*set trainer.attention=auto"):
        set_attention(plain, "eager", "cpu")


@pytest.mark.parametrize(
    "trainer, algo, staleness, blocker",
    [
        ({}, {}, 1, "max_staleness=1"),
        ({}, {}, None, "max_staleness=None"),
        ({"ppo_epochs": 2}, {}, 0, "more than one optimizer step"),
        ({"mini_batches": 2}, {}, 0, "more than one optimizer step"),
        ({}, {"kl_in": "reward"}, 0, "kl_in=reward"),
    ],
)
def test_skip_switches_off_where_its_condition_fails(trainer, algo, staleness, blocker):
    source, why = old_logprobs_source(TrainerConfig(**trainer), AlgorithmConfig(**{**GRPO, **algo}), staleness)
    assert source == "recompute" and blocker in why


def test_skip_config_switch_and_default():
    grpo = AlgorithmConfig(**GRPO)
    assert old_logprobs_source(TrainerConfig(), grpo, 0)[0] == "current"
    assert old_logprobs_source(TrainerConfig(old_logprobs="recompute"), grpo, 0)[0] == "recompute"


def test_rollout_logprobs_as_old():
    batch = grouped_batch()
    step, metrics, _ = run_step(batch, old_logprobs="rollout", max_staleness=2)
    # ratio = exp(π − μ): π ≈ −4.16 for a 64-token random model, μ ≈ −4.1 ± 0.1 (not 1)
    assert step.old_source == "rollout" and metrics["ratio/max"] != pytest.approx(1.0, abs=1e-3)
    assert "rollout_correction/weight/mean" not in metrics  # π_old is μ: nothing to correct


def test_rollout_logprobs_missing_is_a_clear_error():
    batch = random_batch(with_behaviour=False)
    with pytest.raises(ValueError, match="old_logprobs=rollout needs batch.behaviour_logprobs"):
        run_step(batch, old_logprobs="rollout")


def test_compiled_layers_give_the_same_step(monkeypatch):
    """trainer.compile: every decoder layer compiled (dynamic shapes), the step unchanged.
    The graph capture and autograd are torch.compile's own; the backend here is aot_eager
    (no C++ compilation: inductor took 95 s for this model on a busy 2-core host)."""
    import meshrl.services.learner.train.policy as policy

    monkeypatch.setattr(policy, "COMPILE_BACKEND", "aot_eager")
    torch._dynamo.reset()
    batch = grouped_batch()
    compiled = run_step(batch, compile=True, old_logprobs="recompute", ppo_epochs=2)
    plain = run_step(batch, old_logprobs="recompute", ppo_epochs=2)
    layers = compiled[0].policy.model.model.layers
    assert all(layer._compiled_call_impl is not None for layer in layers)
    assert_same_step(compiled, plain, METRICS)
