"""The tiny model dir loads in transformers, round-trips text and renders ChatML."""

import json

import pytest

from meshrl.inputs.models.tiny import SPECIAL_TOKENS, tiny_vocab


def test_vocab_is_specials_then_chars_padded_to_64():
    vocab = tiny_vocab("ab")
    assert list(vocab)[:7] == SPECIAL_TOKENS + ["a", "b"]
    assert len(vocab) == 64 and vocab["<|reserved_0|>"] == 7


def test_tokenizer_round_trips_text(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    text = "What is 3+4? Answer: 7"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == len(text)  # one token per character
    assert tok.decode(ids) == text
    assert tok.eos_token == "<|im_end|>" and tok.pad_token == "<pad>"


def test_chat_template_renders_chatml(tiny_model_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    messages = [{"role": "user", "content": "Hi"}]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    # <|im_start|> u s e r \n H i <|im_end|> \n <|im_start|> a s s i s t a n t \n
    assert len(ids) == 1 + 4 + 1 + 2 + 1 + 1 + 1 + 9 + 1
    assert ids[0] == tok.convert_tokens_to_ids("<|im_start|>")


def test_transformers_loads_and_generates(tiny_model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert model.dtype == torch.float32
    assert model.config.vocab_size == len(tok) == 128
    inputs = tok("1+1=", return_tensors="pt", add_special_tokens=False)
    out = model.generate(**inputs, max_new_tokens=5, min_new_tokens=5, do_sample=False)
    assert out.shape == (1, 4 + 5)
    assert torch.equal(out[0, :4], inputs["input_ids"][0])


def test_config_and_generation_config_name_eos(tiny_model_dir):
    config = json.loads((tiny_model_dir / "config.json").read_text())
    gen = json.loads((tiny_model_dir / "generation_config.json").read_text())
    eos = SPECIAL_TOKENS.index("<|im_end|>")
    assert config["eos_token_id"] == eos and gen["eos_token_id"] == eos
    assert config["max_position_embeddings"] == 512
    assert config["head_dim"] == 32


def test_unsupported_head_dim_is_refused(tmp_path):
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    with pytest.raises(ValueError, match="head_dim=16"):
        build_tiny_model_dir(tmp_path, head_dim=16)
