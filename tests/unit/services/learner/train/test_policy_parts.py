"""Hand-computed checks of the LR schedule, the clipped value loss and metric reduction."""

import math

import pytest
import torch

from meshrl.services.learner.train.critic import clipped_value_loss
from meshrl.services.learner.train.fsdp import DistContext
from meshrl.services.learner.train.metrics import MetricSums
from meshrl.services.learner.train.policy import warmup_cosine


def test_warmup_then_cosine_to_floor():
    f = warmup_cosine(warmup_steps=2, total_steps=6, min_lr_ratio=0.1)
    assert [f(0), f(1), f(2)] == [0.5, 1.0, 1.0]
    assert f(4) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))  # 0.55
    assert f(6) == pytest.approx(0.1) and f(100) == pytest.approx(0.1)
    assert warmup_cosine(0, 10, 0.0)(0) == 1.0


def test_clipped_value_loss_hand_computed():
    values = torch.tensor([[1.5, 0.9, 7.0]])
    old = torch.tensor([[1.0, 1.0, 0.0]])
    returns = torch.tensor([[2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, metrics = clipped_value_loss(values, old, returns, mask, clip=0.2)
    # token 0: max((1.5-2)^2=0.25, (1.2-2)^2=0.64)/2 = 0.32 (clip binds); token 1: 0.81/2; pad: 0
    torch.testing.assert_close(loss, torch.tensor([[0.32, 0.405, 0.0]]))
    assert metrics["critic/vf_clipfrac"].item() == pytest.approx(0.5)
    unclipped, _ = clipped_value_loss(values, old, returns, mask, clip=None)
    torch.testing.assert_close(unclipped, torch.tensor([[0.125, 0.405, 0.0]]))


def test_vf_clipfrac_is_verls_the_clipped_term_won_and_out_of_range_is_kept_apart():
    """verl 0.9.1 `compute_value_loss`: vf_clipfrac = mean(gt(vf_losses2, vf_losses1)), with
    vf_losses2 from V clipped to V_old ± c. Five tokens, V_old = 1, c = 1, by hand:
      V = 1.5, R = 1:   in range, both terms 0.25                   -> not counted
      V = 3,   R = 3:   clipped V = 2: (2 − 3)² = 1  > (3 − 3)² = 0  -> counted
      V = −1,  R = −5:  clipped V = 0: (0 + 5)² = 25 > (−1 + 5)² = 16 -> counted
      V = 4,   R = 10:  clipped V = 2: (2 − 10)² = 64 > (4 − 10)² = 36 -> counted
      V = −0.5, R = 2:  clipped V = 0: (0 − 2)² = 4 < (−0.5 − 2)² = 6.25 -> not counted
    so 3/5 = 0.6; four of five left V_old ± c (0.8), the last where the max keeps V's term."""
    values = torch.tensor([[1.5, 3.0, -1.0, 4.0, -0.5, 9.0]])
    old = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]])
    returns = torch.tensor([[1.0, 3.0, -5.0, 10.0, 2.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0, 1.0, 0.0]])  # the last is padding
    _, metrics = clipped_value_loss(values, old, returns, mask, clip=1.0)
    verl = (
        sum(
            float(max(min(v, o + 1), o - 1) - r) ** 2 > float(v - r) ** 2
            for v, o, r in zip(values[0, :5], old[0, :5], returns[0, :5])
        )
        / 5
    )
    assert verl == 0.6 and metrics["critic/vf_clipfrac"].item() == pytest.approx(0.6)
    assert metrics["critic/vf_out_of_range"].item() == pytest.approx(0.8)


def test_vf_clipfrac_counts_no_rounding_inside_the_range():
    # |1e-8 − 0.3| = 0.3 < c = 1: V is inside its range, so the clipped term is V itself (V_old
    # + (V − V_old) would round to 0.0 in fp32 and make it look larger); the second token is
    # out of range, but its clipped term (2 − 0)² = 4 < (3 − 0)² = 9 is not the one used
    _, metrics = clipped_value_loss(
        torch.tensor([[1e-8, 3.0]]), torch.tensor([[0.3, 1.0]]), torch.tensor([[1e-7, 0.0]]), torch.ones(1, 2), clip=1.0
    )
    assert metrics["critic/vf_clipfrac"].item() == 0.0
    assert metrics["critic/vf_out_of_range"].item() == 0.5  # only |3 − 1| = 2 > 1


def test_metric_sums_weight_tokens_and_keep_extremes():
    sums = MetricSums()
    sums.add_dict({"clip_ratio/high": torch.tensor(0.5), "ratio/max": torch.tensor(1.3)}, 2.0)
    sums.add_dict({"clip_ratio/high": torch.tensor(0.0), "ratio/max": torch.tensor(1.1)}, 6.0)
    sums.total("loss", torch.tensor(0.3))
    sums.total("loss", torch.tensor(0.5))
    out = sums.reduce(DistContext(), updates=2)
    assert out["clip_ratio/high"] == pytest.approx(1.0 / 8.0)  # (0.5·2 + 0·6) / 8
    assert out["ratio/max"] == pytest.approx(1.3)
    assert out["loss"] == pytest.approx(0.4)


def test_fused_adamw_on_cuda_by_default_and_the_same_update_when_forced_here():
    from meshrl.config.algorithm import OptimConfig
    from meshrl.services.learner.train.policy import build_optimizer, use_fused_adamw

    assert use_fused_adamw("auto", "cuda") and not use_fused_adamw("auto", "cpu")
    assert use_fused_adamw("on", "cpu") and not use_fused_adamw("off", "cuda")
    results = []
    for fused in ("off", "on"):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
        optimizer = build_optimizer(model, OptimConfig(lr=1e-2, weight_decay=0.1, fused=fused))
        assert bool(optimizer.defaults["fused"]) == (fused == "on")
        for _ in range(3):
            model(torch.randn(5, 4)).square().sum().backward()
            optimizer.step()
            optimizer.zero_grad()
        results.append([p.detach().clone() for p in model.parameters()])
    for plain, fused in zip(*results):
        torch.testing.assert_close(fused, plain, atol=1e-6, rtol=1e-5)
