"""The GGUF path end to end on a tiny F32 GGUF made in code: same logits, same token ids."""

import pytest

from meshrl.inputs.models.load import ModelLoadError, load_causal_lm, load_tokenizer


@pytest.fixture(scope="module")
def tiny_gguf(tiny_model_dir, tmp_path_factory):
    from meshrl.inputs.models.tiny_gguf import build_tiny_gguf

    return build_tiny_gguf(tiny_model_dir, tmp_path_factory.mktemp("gguf") / "tiny.F32.gguf")


def test_gguf_model_matches_hf_dir_exactly(tiny_gguf, tiny_model_dir):
    import torch

    from_gguf = load_causal_lm(tiny_gguf.parent, gguf_file=tiny_gguf.name)
    from_dir = load_causal_lm(tiny_model_dir)
    assert not hasattr(from_gguf.config, "quantization_config")  # a plain model downstream
    assert from_gguf.config.tie_word_embeddings and from_gguf.config.head_dim == 32
    ids = torch.tensor([[3, 20, 30, 40, 50, 4]])
    with torch.no_grad():  # F32 in, F32 out, q/k permutation undone: bit-identical logits
        assert torch.equal(from_gguf(ids).logits, from_dir(ids).logits)


def test_gguf_saves_as_plain_safetensors_dir(tiny_gguf, tmp_path):
    import torch

    model = load_causal_lm(tiny_gguf)
    model.save_pretrained(tmp_path, safe_serialization=True)
    reloaded = load_causal_lm(tmp_path)
    ids = torch.tensor([[7, 8, 9]])
    with torch.no_grad():
        assert torch.equal(reloaded(ids).logits, model(ids).logits)


def test_gguf_tokenizer_gives_same_ids_and_template(tiny_gguf, tiny_model_dir):
    from_gguf, from_dir = load_tokenizer(tiny_gguf), load_tokenizer(tiny_model_dir)
    text = "What is 3+4? Answer: 7\n ok"
    ids = from_gguf(text, add_special_tokens=False)["input_ids"]
    assert ids == from_dir(text, add_special_tokens=False)["input_ids"]
    assert from_gguf.decode(ids) == text and from_gguf.eos_token == "<|im_end|>"
    chat = [{"role": "user", "content": "hi"}]
    assert from_gguf.apply_chat_template(
        chat, add_generation_prompt=True, tokenize=False
    ) == from_dir.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)


def test_truncated_gguf_names_file(tiny_gguf, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_gguf.read_bytes()[:4096])  # right magic, missing tensors
    with pytest.raises(ModelLoadError, match=r"could not load model from .*cut.gguf"):
        load_causal_lm(cut)
