"""vLLM (CPU, in-process) loads the tiny model dir and generates. Slow: ≈10-30 s start-up."""

import pytest


@pytest.mark.slow
def test_vllm_loads_tiny_model(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(tiny_model_dir), dtype="float32", enforce_eager=True, max_model_len=256, seed=0)
    params = SamplingParams(max_tokens=8, min_tokens=8, temperature=1.0, logprobs=0, ignore_eos=True)
    prompt = "<|im_start|>user\nWhat is 3+4?<|im_end|>\n<|im_start|>assistant\n"
    out = llm.generate([prompt], params)[0]
    assert len(out.outputs[0].token_ids) == 8
    assert len(out.outputs[0].logprobs) == 8
    tok = llm.get_tokenizer()
    assert tok.eos_token == "<|im_end|>"
    # vLLM's incremental detokenizer joins chars exactly as the HF tokenizer does
    assert out.outputs[0].text == tok.decode(out.outputs[0].token_ids, skip_special_tokens=True)


@pytest.mark.slow
def test_vllm_loads_fetched_smollm2(monkeypatch):
    """The dir fetch_smollm2 writes serves in vLLM with its ChatML template (skips if not fetched)."""
    from meshrl.inputs.models.fetch import DEFAULT_CACHE, MARKER, MODEL_NAME

    path = DEFAULT_CACHE.expanduser() / MODEL_NAME
    if not (path / MARKER).exists():
        pytest.skip("run `python -m meshrl.inputs.models.fetch` first")
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    from vllm import LLM, SamplingParams

    llm = LLM(model=str(path), dtype="float32", enforce_eager=True, max_model_len=256, seed=0)
    tok = llm.get_tokenizer()
    messages = [{"role": "user", "content": "What is 3+4? Answer with a number."}]
    prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    out = llm.generate([prompt], SamplingParams(max_tokens=16, temperature=0.0))[0].outputs[0]
    assert "7" in out.text and out.finish_reason == "stop"  # stops on <|im_end|>
