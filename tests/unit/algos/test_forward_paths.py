"""Shared-prefix and packed forwards equal the padded one: log-probs, entropy, gradients."""

import pytest
import torch

from meshrl.algos.forward import split_head
from meshrl.algos.logprobs import response_logits, response_logprobs, token_logprobs
from tests.unit.algos.conftest import build_tiny_llama


def shared_prompt_batch():
    """6 rows, 2 groups of 3 sharing a (left-padded) prompt; right-padded ragged responses (one empty)."""
    prompt_ids = torch.tensor([[0, 5, 6, 7]] * 3 + [[9, 10, 11, 12]] * 3)
    prompt_mask = (prompt_ids > 0).long()
    response_ids = torch.tensor([[3, 4, 0], [8, 0, 0], [1, 2, 3], [4, 4, 4], [0, 0, 0], [7, 8, 0]])
    return dict(
        prompt_ids=prompt_ids,
        prompt_mask=prompt_mask,
        response_ids=response_ids,
        response_mask=(response_ids > 0).float(),
    )


def logprobs_and_grads(model, batch, forward):
    """The model's own full-logits forward (reference) or one of the `forward` paths."""
    model.zero_grad()
    if forward == "reference":
        logits = response_logits(model, *batch.values())
        lp, ent = token_logprobs(logits, batch["response_ids"], with_entropy=True)
        lp, ent = lp * batch["response_mask"], ent * batch["response_mask"]
    else:
        lp, ent = response_logprobs(model, batch, with_entropy=True, forward=forward)
    (lp.sum() + 0.5 * ent.sum()).backward()
    return lp.detach(), ent.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("forward", ["padded", "shared_prefix", "packed"])
def test_forward_path_equals_full_logits(tiny_llama, forward):
    batch = shared_prompt_batch()
    ref = logprobs_and_grads(tiny_llama, batch, "reference")
    got = logprobs_and_grads(tiny_llama, batch, forward)
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=0)
    torch.testing.assert_close(got[1], ref[1], atol=1e-5, rtol=0)
    for name, grad in ref[2].items():  # prompt KV depend on the weights: their grads must match
        torch.testing.assert_close(got[2][name], grad, atol=1e-5, rtol=0, msg=name)
    assert (got[0][batch["response_mask"] == 0] == 0).all()


def test_shared_prefix_with_checkpointing_falls_back_and_agrees():
    model = build_tiny_llama()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    batch = shared_prompt_batch()
    ref = logprobs_and_grads(model, batch, "reference")
    got = logprobs_and_grads(model, batch, "shared_prefix")
    torch.testing.assert_close(got[0], ref[0], atol=1e-5, rtol=0)


def test_scaled_logits_models_keep_their_own_forward(tiny_llama):
    assert split_head(tiny_llama) is not None
    tiny_llama.config.final_logit_softcapping = 30.0
    assert split_head(tiny_llama) is None


def test_unknown_forward_is_a_clear_error(tiny_llama):
    with pytest.raises(ValueError, match="unknown forward 'flat'"):
        response_logprobs(tiny_llama, shared_prompt_batch(), forward="flat")


@pytest.mark.parametrize("forward", ["padded", "shared_prefix", "packed"])
def test_zero_width_responses(tiny_llama, forward):
    batch = shared_prompt_batch()
    batch["response_ids"], batch["response_mask"] = batch["response_ids"][:, :0], batch["response_mask"][:, :0]
    out = response_logprobs(tiny_llama, batch, with_entropy=True, forward=forward)
    assert out.logprobs.shape == (6, 0) and out.entropy.shape == (6, 0)
