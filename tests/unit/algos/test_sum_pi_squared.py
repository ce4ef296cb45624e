"""Σ_v π(v)² per response token from the chunked log-prob forward equals softmax(logits)²
summed over the vocabulary of a full forward (the optimal-token baseline's input)."""

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos.logprobs import response_stats, token_stats
from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch


def full_sum_pi_squared(model, batch, temperature: float) -> torch.Tensor:
    """The plain way: the whole [B, P+T, V] logits, softmax, squared, summed; 0 on padding."""
    with torch.no_grad():
        logits = model(
            input_ids=batch.input_ids(), attention_mask=batch.attention_mask(), position_ids=batch.position_ids()
        ).logits
    p, t = batch.prompt_len, batch.response_len
    probs = torch.softmax(logits[:, p - 1 : p + t - 1].double() / temperature, dim=-1)
    return (probs**2).sum(-1).float() * batch.response_mask


@pytest.mark.parametrize("forward", ["padded", "shared_prefix", "packed"])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_chunked_sum_pi_squared_equals_the_full_softmax(forward, temperature):
    model, batch = build_tiny_llama().eval(), random_batch(n=8, group_size=4)
    expected = full_sum_pi_squared(model, batch, temperature)
    with torch.no_grad():  # 64 elements a chunk: one row of the vocabulary at a time
        out = response_stats(
            model, batch, temperature=temperature, forward=forward, with_sum_pi_squared=True, chunk_elements=64
        )
    assert_close(out.sum_pi_squared, expected, atol=1e-6, rtol=0)
    assert out.sum_pi_squared[batch.response_mask > 0].min() > 1 / 64  # ≥ 1/V, here > it
    plain = response_stats(model, batch, temperature=temperature, forward=forward)
    assert plain.sum_pi_squared is None
    assert_close(plain.logprobs, out.logprobs, atol=1e-6, rtol=0)


def test_token_stats_on_logits_by_hand():
    # logits (0, ln 3): π = (¼, ¾), Σπ² = 1/16 + 9/16 = 0.625; a uniform row of 4: Σπ² = ¼
    logits = torch.tensor([[[0.0, torch.log(torch.tensor(3.0)), -1e9, -1e9], [0.0, 0.0, 0.0, 0.0]]])
    logprob, _, spq = token_stats(logits, torch.tensor([[1, 2]]), with_sum_pi_squared=True, chunk_elements=4)
    assert_close(spq, torch.tensor([[0.625, 0.25]]))
    assert_close(logprob, torch.log(torch.tensor([[0.75, 0.25]])))
