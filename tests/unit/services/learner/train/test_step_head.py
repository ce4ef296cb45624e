"""The training step runs the LM head as `trainer.lm_head*` says (meshrl/algos/head_plan.py):
the chunk size reaches the head, any chunking gives the same update, and a kernel that
cannot run here is refused when the step is built, naming the key."""

import pytest
import torch

import meshrl.algos.logprobs as logprobs
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from tests.unit.services.learner.train.helpers import VOCAB, build_tiny_llama, random_batch, weights_of

GRPO = dict(advantage_estimator="grpo", policy_loss="ppo", kl_coef=0.04, kl_in="loss", entropy_coeff=0.01)


def make_step(**trainer) -> TrainStep:
    cfg = TrainerConfig(micro_batch_size=4, optim={"lr": 1e-3}, **trainer)
    return TrainStep(build_policy(build_tiny_llama(), cfg, total_steps=10), AlgorithmConfig(**GRPO), cfg)


def test_chunk_setting_reaches_the_head_and_changes_nothing_else(monkeypatch):
    seen, real = [], logprobs.chunked_rows

    def spy(*args):
        seen.append(args[-1])  # rows per chunk
        return real(*args)

    monkeypatch.setattr(logprobs, "chunked_rows", spy)
    results = {}
    for chunk in (3 * VOCAB, 1 << 20):
        seen.clear()
        step = make_step(lm_head_chunk=chunk)
        metrics = step(random_batch(), 0)
        assert set(seen) == {chunk // VOCAB}, (chunk, seen)
        results[chunk] = (metrics, weights_of(step.policy.model))
    (small, small_w), (big, big_w) = results.values()
    assert small["loss"] == pytest.approx(big["loss"], abs=1e-6)
    for name, tensor in small_w.items():
        torch.testing.assert_close(tensor, big_w[name], atol=1e-6, rtol=0, msg=name)


def test_liger_head_on_cpu_is_refused_when_the_step_is_built(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="trainer.lm_head=liger cannot run: it is a Triton GPU kernel"):
        make_step(lm_head="liger")
