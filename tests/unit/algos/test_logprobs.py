"""response_logprobs on a padded batch equals a naive per-sequence log_softmax."""

import numpy as np
import pytest
import torch

from meshrl.algos.batch import RolloutBatch
from meshrl.algos.logprobs import response_logprobs, sequence_logprobs, token_logprobs

PROMPTS = [np.array([5, 6, 7]), np.array([9]), np.array([3, 4, 5, 6, 8])]
RESPONSES = [np.array([11, 12]), np.array([13, 14, 15, 16]), np.array([17])]


def batch() -> RolloutBatch:
    return RolloutBatch.from_sequences(PROMPTS, RESPONSES, rewards=[0.0, 1.0, 0.5], group_ids=[0, 0, 1], pad_id=0)


def naive(model, prompt, response, temperature=1.0):
    """Unpadded forward of one sequence, full log_softmax, gather the response tokens."""
    ids = torch.as_tensor(np.concatenate([prompt, response]))[None]
    logits = model(input_ids=ids).logits[0].float() / temperature
    logp = torch.log_softmax(logits, dim=-1)
    positions = torch.arange(len(prompt) - 1, len(prompt) + len(response) - 1)
    token_lp = logp[positions, torch.as_tensor(response)]
    entropy = -(logp[positions].exp() * logp[positions]).sum(-1)
    return token_lp, entropy


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_matches_naive_per_sequence(tiny_llama, temperature):
    with torch.no_grad():
        out = response_logprobs(tiny_llama, batch(), temperature=temperature, with_entropy=True)
        assert out.logprobs.shape == (3, 4)
        for row, (p, r) in enumerate(zip(PROMPTS, RESPONSES)):
            want_lp, want_ent = naive(tiny_llama, p, r, temperature)
            torch.testing.assert_close(out.logprobs[row, : len(r)], want_lp, atol=1e-5, rtol=0)
            torch.testing.assert_close(out.entropy[row, : len(r)], want_ent, atol=1e-5, rtol=0)
            assert (out.logprobs[row, len(r) :] == 0).all() and (out.entropy[row, len(r) :] == 0).all()


def test_chunking_and_gradients_match_unchunked(tiny_llama):
    b = batch()
    full = response_logprobs(tiny_llama, b, with_entropy=True, chunk_elements=1 << 30)
    (full.logprobs.sum() + full.entropy.sum()).backward()
    want = [p.grad.clone() for p in tiny_llama.parameters()]
    tiny_llama.zero_grad()
    chunked = response_logprobs(tiny_llama, b, with_entropy=True, chunk_elements=64 * 3)
    (chunked.logprobs.sum() + chunked.entropy.sum()).backward()
    torch.testing.assert_close(chunked.logprobs, full.logprobs)
    for got, exp in zip((p.grad for p in tiny_llama.parameters()), want):
        torch.testing.assert_close(got, exp, atol=1e-6, rtol=1e-5)


def test_mapping_input_and_sequence_sum(tiny_llama):
    b = batch()
    tensors = {k: getattr(b, k) for k in ("prompt_ids", "prompt_mask", "response_ids", "response_mask")}
    with torch.no_grad():
        lp = response_logprobs(tiny_llama, tensors).logprobs
        want = naive(tiny_llama, PROMPTS[1], RESPONSES[1])[0].sum()
    torch.testing.assert_close(sequence_logprobs(lp, b.response_mask)[1], want, atol=1e-5, rtol=0)


def test_token_logprobs_hand_computed():
    # logits [0, log 3] → probs [1/4, 3/4]; entropy = -(1/4 ln 1/4 + 3/4 ln 3/4)
    logits = torch.tensor([[[0.0, float(np.log(3.0))]]])
    lp, ent = token_logprobs(logits, torch.tensor([[1]]), with_entropy=True)
    assert lp.item() == pytest.approx(np.log(0.75), abs=1e-6)
    assert ent.item() == pytest.approx(-(0.25 * np.log(0.25) + 0.75 * np.log(0.75)), abs=1e-6)
