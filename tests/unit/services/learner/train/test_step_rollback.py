"""A training step that fails leaves weights, AdamW state, KL coefficient and gradients as they
were (services/learner/train/transaction.py), whether it fails after its only update's
gradients (the metrics' all-reduce: where every step failed on CUDA, issue 21) or in a later
update of a multi-update batch (a non-finite loss), and the next step then trains exactly as
if the failed one had never run."""

import dataclasses

import pytest
import torch

from meshrl.algos import NonFiniteError
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.metrics import MetricSums
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep
from meshrl.services.learner.train.transaction import snapshot_place
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch, weights_of
from tests.unit.services.learner.train.test_dpo import make as make_dpo
from tests.unit.services.learner.train.test_dpo import pairs, with_reference

ADAPTIVE_KL = dict(
    advantage_estimator="grpo", policy_loss="ppo", kl_in="reward", kl_ctrl="adaptive", kl_coef=0.05, entropy_coeff=0.01
)


def make_step(**trainer) -> TrainStep:
    cfg = TrainerConfig(micro_batch_size=3, optim={"lr": 1e-2}, **trainer)
    return TrainStep(build_policy(build_tiny_llama(), cfg, total_steps=10), AlgorithmConfig(**ADAPTIVE_KL), cfg)


def optimizer_state(optimizer) -> list[dict]:
    return [
        {k: v.clone() if torch.is_tensor(v) else v for k, v in optimizer.state[p].items()}
        for group in optimizer.param_groups
        for p in group["params"]
    ]


def state_of(step: TrainStep) -> dict:
    return {
        "weights": weights_of(step.policy.model),
        "adam": optimizer_state(step.policy.optimizer),
        "kl_coef": step.kl_ctrl.value,
        "lr": step.policy.lr,
    }


def assert_same_state(got: dict, want: dict) -> None:
    assert got["kl_coef"] == want["kl_coef"] and got["lr"] == want["lr"]
    for name, tensor in want["weights"].items():
        assert torch.equal(got["weights"][name], tensor), name
    assert len(got["adam"]) == len(want["adam"])
    for got_p, want_p in zip(got["adam"], want["adam"]):
        assert got_p.keys() == want_p.keys()
        for key, value in want_p.items():
            assert torch.equal(torch.as_tensor(got_p[key]), torch.as_tensor(value)), key


def fail_reduce_once(monkeypatch):
    real = MetricSums.reduce

    def reduce(self, *args, **kwargs):
        monkeypatch.setattr(MetricSums, "reduce", real)
        raise RuntimeError("Expected all tensors to be on the same device (injected)")

    monkeypatch.setattr(MetricSums, "reduce", reduce)


def nan_loss_on_call(step: TrainStep, call: int):
    """The policy loss turns NaN on its `call`-th micro-batch (1-based), once."""
    real, calls = step.policy_loss, [0]

    def loss(**kwargs):
        result = real(**kwargs)
        calls[0] += 1
        if calls[0] == call:
            return dataclasses.replace(result, loss_mat=result.loss_mat * float("nan"))
        return result

    step.policy_loss = loss


@pytest.mark.parametrize("earlier_steps", [0, 1])
def test_single_update_step_failing_after_its_gradients_changes_nothing(monkeypatch, earlier_steps):
    step, batch = make_step(), random_batch()
    assert snapshot_place(step.trainer.rollback, 1) is None  # atomic by order, no copy
    for i in range(earlier_steps):
        step(random_batch(seed=9), i)
    before = state_of(step)
    fail_reduce_once(monkeypatch)
    with pytest.raises(RuntimeError, match="same device"):
        step(batch, earlier_steps)
    assert_same_state(state_of(step), before)
    assert all(p.grad is None for p in step.policy.model.parameters())
    # the retry trains exactly as a twin that never failed
    twin = make_step()
    for i in range(earlier_steps):
        twin(random_batch(seed=9), i)
    got, want = step(batch, earlier_steps), twin(batch, earlier_steps)
    assert {k: v for k, v in got.items() if not k.startswith("time/")} == pytest.approx(
        {k: v for k, v in want.items() if not k.startswith("time/")}, rel=1e-6, abs=1e-9
    )
    assert_same_state(state_of(step), state_of(twin))


@pytest.mark.parametrize("rollback", ["auto", "host"])
def test_multi_update_step_failing_in_a_later_update_is_rolled_back(rollback):
    step, batch = make_step(ppo_epochs=2, rollback=rollback), random_batch()
    step(random_batch(seed=9), 0)  # AdamW state exists
    before = state_of(step)
    nan_loss_on_call(step, call=4)  # 3 micro-batches per update: the second update's first
    with pytest.raises(NonFiniteError, match="loss"):
        step(batch, 1)
    assert_same_state(state_of(step), before)
    assert all(p.grad is None for p in step.policy.model.parameters())


def test_rollback_off_leaves_a_failed_multi_update_step_part_applied():
    step, batch = make_step(ppo_epochs=2, rollback="off"), random_batch()
    before = weights_of(step.policy.model)
    nan_loss_on_call(step, call=4)
    with pytest.raises(NonFiniteError):
        step(batch, 0)
    after = weights_of(step.policy.model)
    assert any(not torch.equal(before[k], after[k]) for k in before)  # the first update stayed


def test_dpo_step_failing_after_its_gradients_changes_nothing(monkeypatch):
    step = make_dpo()
    batch = with_reference(step, pairs())
    before = weights_of(step.policy.model)
    fail_reduce_once(monkeypatch)
    with pytest.raises(RuntimeError, match="same device"):
        step(batch, 0)
    assert all(torch.equal(v, before[k]) for k, v in weights_of(step.policy.model).items())
    assert not step.policy.optimizer.state
    assert all(p.grad is None for p in step.policy.model.parameters())
