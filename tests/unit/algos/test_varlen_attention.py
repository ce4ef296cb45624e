"""`trainer.attention: varlen` (meshrl/algos/varlen_attention.py): a packed row attends within
each sequence without a dense N×N mask, and gives the padded forward's log-probs, entropy
and gradients (MHA and GQA, with gradient checkpointing); padded rows through the same
setting are sdpa's; a model that cannot take it is refused."""

import numpy as np
import pytest
import torch
from torch.distributed._tools.mem_tracker import MemTracker

from meshrl.algos.batch import RolloutBatch
from meshrl.algos.logprobs import response_logprobs
from meshrl.algos.varlen_attention import VARLEN, set_varlen_attention
from tests.unit.algos.test_forward_paths import logprobs_and_grads, shared_prompt_batch


def tiny_model(kv_heads: int):
    """Qwen2 (biased q/k/v, tied embeddings), 4 query heads over `kv_heads` key/value heads."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        max_position_embeddings=256,
        tie_word_embeddings=True,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    return Qwen2ForCausalLM(config).float()


@pytest.mark.parametrize("kv_heads", [4, 1])
@pytest.mark.parametrize("checkpointing", [False, True])
def test_packed_varlen_equals_padded_sdpa(kv_heads, checkpointing):
    batch = shared_prompt_batch()
    reference, model = tiny_model(kv_heads), tiny_model(kv_heads)
    reference.set_attn_implementation("sdpa")
    set_varlen_attention(model)
    assert model.config._attn_implementation == VARLEN
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    want = logprobs_and_grads(reference, batch, "padded")
    for forward in ("packed", "padded"):  # padded rows take sdpa's path under the same setting
        got = logprobs_and_grads(model, batch, forward)
        torch.testing.assert_close(got[0], want[0], atol=1e-5, rtol=0)
        torch.testing.assert_close(got[1], want[1], atol=1e-5, rtol=0)
        for name, grad in want[2].items():
            torch.testing.assert_close(got[2][name], grad, atol=1e-5, rtol=0, msg=(forward, name))


def packed_peak_bytes(model, batch) -> int:
    tracker = MemTracker()
    tracker.track_external(model)
    with tracker:
        out = response_logprobs(model, batch, forward="packed")
        out.logprobs.sum().backward()
    model.zero_grad(set_to_none=True)
    return tracker.get_tracker_snapshot("peak")[torch.device("cpu")]["Total"]


def test_packed_varlen_builds_no_dense_mask():
    """16 sequences (24-token prompts, 20-39-token responses) in one packed row of N = 864:
    sdpa's block-diagonal boolean mask alone is N² bytes; measured, varlen's peak (forward +
    backward) is 5.3 MB against sdpa's 11.3 MB, ~8 N² bytes less."""
    rng = np.random.default_rng(0)
    prompts = [rng.integers(1, 64, 24) for _ in range(16)]
    responses = [rng.integers(1, 64, rng.integers(20, 40)) for _ in range(16)]
    batch = RolloutBatch.from_sequences(prompts, responses, rewards=np.zeros(16), group_ids=np.arange(16), pad_id=0)
    n = int(batch.prompt_mask.sum() + batch.response_mask.sum())
    sdpa, varlen = tiny_model(4), tiny_model(4)
    sdpa.set_attn_implementation("sdpa")
    set_varlen_attention(varlen)
    saved = packed_peak_bytes(sdpa, batch) - packed_peak_bytes(varlen, batch)
    assert saved >= 4 * n * n, (saved, n)


def test_a_model_without_attention_interface_is_refused():
    with pytest.raises(ValueError, match="trainer.attention=varlen: Linear is not a transformers"):
        set_varlen_attention(torch.nn.Linear(2, 2))
