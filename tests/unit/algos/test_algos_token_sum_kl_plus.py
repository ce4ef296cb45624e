"""`token-sum` aggregation and the straight-through KL estimators `k1+` / `k3+`, by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import aggregate_loss, kl_estimate, loss_denominator, loss_numerator

LOSS = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])  # 9 = garbage on padding
MASK = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])


def test_token_sum_is_the_plain_sum_of_valid_tokens_with_unit_gradient():
    params = LOSS.clone().requires_grad_(True)
    loss = aggregate_loss(params, MASK, "token-sum")
    assert loss.item() == pytest.approx(10.0)  # 1 + 2 + 3 + 4
    loss.backward()
    assert_close(params.grad, MASK)  # ∂/∂L_it = m_it
    assert loss_denominator(MASK, "token-sum").item() == 1.0
    assert aggregate_loss(LOSS, torch.zeros(2, 3), "token-sum").item() == 0.0


def test_token_sum_split_into_micro_batches_adds_numerators_over_one_denominator():
    whole = aggregate_loss(LOSS, MASK, "token-sum")
    parts = loss_numerator(LOSS[:1], MASK[:1], "token-sum") + loss_numerator(LOSS[1:, :1], MASK[1:, :1], "token-sum")
    assert (parts / loss_denominator(MASK, "token-sum")).item() == pytest.approx(whole.item())


# log-ratio l = log p − log q per token; expected values and gradients by hand
LOG_RATIO = [0.5, -1.0, 0.0]


def kl_and_grad(kind):
    logprobs = torch.tensor([LOG_RATIO], requires_grad=True)
    kl = kl_estimate(logprobs, torch.zeros(1, 3), kind, torch.ones(1, 3))
    kl.sum().backward()
    return kl.detach()[0].tolist(), logprobs.grad[0].tolist()


@pytest.mark.parametrize(
    "kind, values",
    [
        ("k1+", LOG_RATIO),  # k1 = r
        ("k3+", [math.exp(-r) - 1 + r for r in LOG_RATIO]),  # k3 = e^{−r} − 1 + r (r = log ratio)
    ],
)
def test_plus_variants_keep_the_value_and_take_k2s_gradient(kind, values):
    value, grad = kl_and_grad(kind)
    assert value == pytest.approx(values)
    # ∂(½ l²)/∂log p = l
    assert grad == pytest.approx(LOG_RATIO)


def test_plain_k1_and_k3_gradients_differ_from_the_plus_variants():
    _, grad_k1 = kl_and_grad("k1")
    _, grad_k3 = kl_and_grad("k3")
    assert grad_k1 == pytest.approx([1.0, 1.0, 1.0])  # ∂l/∂log p
    # ∂(e^{−l} − 1 + l)/∂l = 1 − e^{−l}: 1 − e^{−0.5} = 0.393469, 1 − e = −1.718282, 0
    assert grad_k3 == pytest.approx([0.393469, -1.718282, 0.0], abs=1e-6)
