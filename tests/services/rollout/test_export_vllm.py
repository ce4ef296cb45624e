"""vLLM serves a checkpoint exported by `export_hf`, from the export dir alone.

What it proves: a trained (perturbed) tiny model is checkpointed and exported with no hints
(architecture from the checkpoint's hf_config, tokenizer from its run config), and a
RolloutEngine (vLLM AsyncLLM) started on that dir — its config.json, tokenizer files and
model.safetensors, nothing of the base dir — (a) tokenises and renders the chat template as
the base tokenizer does, (b) decodes greedily the same tokens as transformers on the export,
(c) gives per-token log-probs equal to a transformers forward of the export and unlike
the base model's, so the trained weights (embedding stored once, tied) are what it serves.

Why a dedicated engine instead of reloading the export into the session engine: a reload
keeps the session engine's own config and tokenizer and re-ties lm_head by hand
(worker_extension), so it would not show that vLLM reads an export dir by itself. It costs
one more engine start (≈30-60 s here), hence `slow`.
Run: .venv/bin/python -m pytest tests/services/rollout/test_export_vllm.py -m slow
"""

import numpy as np
import pytest
import torch

from meshrl.inputs.checkpoint import export_hf, save_checkpoint
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from tests.fixtures.vllm import hf_logprobs, perturbed_weights, prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]
TEXT, MAX_TOKENS = "hello world", 12


@pytest.fixture
def export_dir(tiny_model_dir, tmp_path):
    """The tiny model with perturbed weights, saved as step 3 of a run, then exported."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32)
    model.load_state_dict(perturbed_weights(tiny_model_dir, seed=5), strict=False)
    model.tie_weights()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    save_checkpoint(
        tmp_path / "run",
        3,
        model=model,
        optimizer=optimizer,
        config_hash="h",
        config={"model": {"path": str(tiny_model_dir)}},
    )
    return export_hf(tmp_path / "run", tmp_path / "export")


def hf_greedy(model_dir, prompt_ids, max_new_tokens: int) -> list[int]:
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    with torch.no_grad():
        out = model.generate(
            torch.tensor([list(prompt_ids)]),
            max_new_tokens=max_new_tokens,
            do_sample=False,
            pad_token_id=model.config.eos_token_id,
        )
    return out[0, len(prompt_ids) :].tolist()


def check_tokenizer(tokenizer, base_dir) -> None:
    from transformers import AutoTokenizer

    base = AutoTokenizer.from_pretrained(str(base_dir))
    assert tokenizer.encode(TEXT, add_special_tokens=False) == base.encode(TEXT, add_special_tokens=False)
    chat = [{"role": "user", "content": "1+1=?"}]
    rendered = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    assert rendered == base.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)


async def test_vllm_serves_the_export_dir(export_dir, tiny_model_dir):
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine

    engine = await RolloutEngine.start(
        EngineConfig(model=str(export_dir), max_model_len=256, kv_cache_gb=0.25, replica_id="rollout-export")
    )
    try:
        check_tokenizer(engine.tokenizer, tiny_model_dir)
        greedy = await engine.generate_group(
            prompt_task(engine.tokenizer, TEXT, n=1, temperature=0.0, max_tokens=MAX_TOKENS)
        )
        sampled = await engine.generate_group(prompt_task(engine.tokenizer, TEXT, n=2, max_tokens=MAX_TOKENS))
    finally:
        engine.shutdown()
    prompt = unpack_int32(greedy.task.prompt_token_ids)
    tokens = unpack_int32(greedy.samples[0].response_token_ids).tolist()
    assert tokens and tokens == hf_greedy(export_dir, prompt, MAX_TOKENS)[: len(tokens)]
    for sample in sampled.samples:
        ids, logprobs = unpack_int32(sample.response_token_ids), unpack_float32(sample.behaviour_logprobs)
        np.testing.assert_allclose(logprobs, hf_logprobs(export_dir, prompt, ids), atol=1e-4)
        assert np.abs(logprobs - hf_logprobs(tiny_model_dir, prompt, ids)).max() > 1e-2  # not the base
