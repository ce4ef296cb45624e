"""load_causal_lm / load_tokenizer: HF dirs load; every wrong input names the file and the fix."""

import json

import pytest

from meshrl.inputs.models.load import ModelLoadError, load_causal_lm, load_tokenizer, plain_copy, resolve_model_source


def test_hf_dir_loads_in_requested_dtype(tiny_model_dir):
    import torch

    model = load_causal_lm(tiny_model_dir, dtype="bfloat16")
    assert model.dtype == torch.bfloat16 and not model.training
    assert load_tokenizer(tiny_model_dir).eos_token == "<|im_end|>"


def test_missing_path_is_named(tmp_path):
    with pytest.raises(ModelLoadError, match=r"nope does not exist.*meshrl.inputs.models.fetch"):
        load_causal_lm(tmp_path / "nope")
    with pytest.raises(ModelLoadError, match="tokenizer path .*nope does not exist"):
        load_tokenizer(tmp_path / "nope")


def test_dir_without_config_or_weights(tmp_path):
    with pytest.raises(ModelLoadError, match="has no config.json"):
        resolve_model_source(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    with pytest.raises(ModelLoadError, match=r"no weights \(\*.safetensors\).*config.json"):
        resolve_model_source(tmp_path)


def test_unreadable_gguf_names_file_and_fix(tmp_path):
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"<html>not found</html>")
    with pytest.raises(ModelLoadError, match=r"model.gguf is not a GGUF file \(starts with b'<htm'"):
        load_causal_lm(bad)
    with pytest.raises(ModelLoadError, match="download it again"):
        load_tokenizer(tmp_path, gguf_file="model.gguf")


def test_gguf_file_missing_from_dir_lists_dir(tmp_path):
    (tmp_path / "other.gguf").write_bytes(b"GGUF")
    with pytest.raises(ModelLoadError, match=r"x.gguf not found .*'other.gguf'"):
        resolve_model_source(tmp_path, "x.gguf")
    assert resolve_model_source(tmp_path / "other.gguf") == (tmp_path, "other.gguf")


def test_non_gguf_file_is_refused(tmp_path):
    f = tmp_path / "weights.bin"
    f.write_bytes(b"123")
    with pytest.raises(ModelLoadError, match="is a file but not a .gguf"):
        load_causal_lm(f)


def test_bad_dtype_lists_allowed(tiny_model_dir):
    with pytest.raises(ModelLoadError, match=r"dtype='fp8' is not one of \['bfloat16'"):
        load_causal_lm(tiny_model_dir, dtype="fp8")


def test_plain_copy_keeps_weights_ties_and_logits(tiny_model_dir):
    import torch

    model = load_causal_lm(tiny_model_dir)
    model.config.quantization_config = {"quant_method": "gguf"}  # what a GGUF load leaves
    copy = plain_copy(model).eval()
    assert not hasattr(copy.config, "quantization_config")
    assert copy.lm_head.weight.data_ptr() == copy.model.embed_tokens.weight.data_ptr()
    ids = torch.tensor([[5, 6, 7, 8]])
    assert torch.equal(copy(ids).logits, model(ids).logits)
