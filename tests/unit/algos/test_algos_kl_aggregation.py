"""KL estimators and loss aggregation, including the micro-batch split equality."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import (
    AGG_MODES,
    UnknownNameError,
    aggregate_loss,
    kl_estimate,
    list_kl_estimators,
    loss_denominator,
    loss_numerator,
)

# log p − log q = (1, −1)
LOGP = torch.tensor([[-1.0, -2.0]])
REF = torch.tensor([[-2.0, -1.0]])


@pytest.mark.parametrize(
    "kind, expected",
    [
        ("k1", [1.0, -1.0]),  # l
        ("k2", [0.5, 0.5]),  # ½ l²
        ("mse", [0.5, 0.5]),  # ½ l² (verl's name)
        ("abs", [1.0, 1.0]),  # |l|
        # k3 with log(q/p) = (−1, 1): e^−1 − 1 + 1 = 0.367879; e − 1 − 1 = 0.718282
        ("k3", [math.exp(-1), math.e - 2]),
    ],
)
def test_kl_kinds(kind, expected):
    assert_close(kl_estimate(LOGP, REF, kind), torch.tensor([expected]))


def test_k3_is_default_non_negative_and_clamped():
    assert_close(kl_estimate(LOGP, REF), kl_estimate(LOGP, REF, "k3"))
    # log(q/p) = −100 is clamped to −20: e^−20 − 1 + 20 = 19.000000002
    # log(q/p) = +100 is clamped to +20: e^20 − 21 = 485165174.4 (finite)
    kl = kl_estimate(torch.tensor([[0.0, -100.0]]), torch.tensor([[-100.0, 0.0]]), "k3")
    assert kl[0, 0].item() == pytest.approx(19.0, abs=1e-4)
    assert kl[0, 1].item() == pytest.approx(math.exp(20) - 21, rel=1e-6)
    random = kl_estimate(torch.randn(4, 8), torch.randn(4, 8), "k3")
    assert (random >= 0).all()


def test_kl_mask_zeroes_padding_and_unknown_kind_lists_names():
    kl = kl_estimate(LOGP, REF, "k1", response_mask=torch.tensor([[1.0, 0.0]]))
    assert_close(kl, torch.tensor([[1.0, 0.0]]))
    with pytest.raises(UnknownNameError) as info:
        kl_estimate(LOGP, REF, "k4")
    assert all(name in str(info.value) for name in list_kl_estimators())


# loss matrix with garbage (9) on padding; lengths 3 and 1
LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("token-mean", 2.5),  # (1 + 2 + 3 + 4) / 4 tokens
        ("seq-mean-token-sum", 5.0),  # (6 + 4) / 2 sequences
        ("seq-mean-token-mean", 3.0),  # (6/3 + 4/1) / 2
        ("seq-mean-token-sum-norm", 10 / 6),  # (6 + 4) / (2 sequences · 3 = mask.shape[1])
    ],
)
def test_aggregation_modes(mode, expected):
    assert aggregate_loss(LOSS, MASK, mode).item() == pytest.approx(expected)


def test_sum_norm_uses_the_given_constant():
    # (6 + 4) / (2 · 10)
    assert aggregate_loss(LOSS, MASK, "seq-mean-token-sum-norm", norm_len=10).item() == pytest.approx(0.5)


def test_fully_masked_sequences_do_not_count_and_empty_batch_is_zero():
    loss = torch.cat([LOSS, torch.full((1, 3), 5.0)])
    mask = torch.cat([MASK, torch.zeros(1, 3)])
    assert aggregate_loss(loss, mask, "seq-mean-token-sum").item() == pytest.approx(5.0)
    assert aggregate_loss(loss, mask, "token-mean").item() == pytest.approx(2.5)
    for mode in AGG_MODES:
        assert aggregate_loss(LOSS, torch.zeros(2, 3), mode).item() == 0.0


def test_unknown_mode_lists_modes():
    with pytest.raises(UnknownNameError, match="token-mean, seq-mean-token-sum"):
        aggregate_loss(LOSS, MASK, "mean")


# token-sum's denominator is 1 for the whole batch, not a sum over micro-batches: its own test
@pytest.mark.parametrize("mode", [m for m in AGG_MODES if m != "token-sum"])
def test_micro_batch_split_equals_whole_batch(mode):
    """Σ_k numerator_k / Σ_k denominator_k = aggregate_loss(whole), in value and gradient,
    with uneven micro-batches, an empty sequence, and each micro-batch trimmed to its own
    longest response (so norm_len must be passed as the shared constant)."""
    torch.manual_seed(0)
    lengths = torch.tensor([5, 1, 0, 3, 2, 4, 1])
    mask = (torch.arange(6) < lengths.unsqueeze(-1)).float()
    params = torch.randn(7, 6, requires_grad=True)
    whole = aggregate_loss(params * 2.0, mask, mode, norm_len=6)
    (whole_grad,) = torch.autograd.grad(whole, params)

    splits = [slice(0, 2), slice(2, 3), slice(3, 7)]
    trimmed = [(s, int(lengths[s].max().clamp_min(1))) for s in splits]
    denominator = sum(loss_denominator(mask[s, :t], mode, norm_len=6) for s, t in trimmed)
    total = torch.zeros(())
    for s, t in trimmed:  # one backward per micro-batch, as a trainer would do
        total = total + loss_numerator(params[s, :t] * 2.0, mask[s, :t], mode, norm_len=6) / denominator
    (split_grad,) = torch.autograd.grad(total, params)
    assert total.item() == pytest.approx(whole.item(), rel=1e-6)
    assert_close(split_grad, whole_grad)


def test_denominators_count_tokens_sequences_and_constant():
    mask = torch.cat([MASK, torch.zeros(1, 3)])
    assert loss_denominator(mask, "token-mean").item() == 4.0
    assert loss_denominator(mask, "seq-mean-token-sum").item() == 2.0
    assert loss_denominator(mask, "seq-mean-token-mean").item() == 2.0
    assert loss_denominator(mask, "seq-mean-token-sum-norm", norm_len=8).item() == 16.0
