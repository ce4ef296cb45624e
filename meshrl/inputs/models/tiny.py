"""Build a tiny random LlamaForCausalLM with a character-level ChatML tokenizer, in code.

Tests need a model that loads in transformers and in vLLM without a model hub. This writes a
complete Hugging Face model dir: `config.json`, `model.safetensors` (float32, random init),
`generation_config.json`, and a fast tokenizer (`tokenizer.json`, `tokenizer_config.json`,
`special_tokens_map.json`) whose chat template has SmolLM2's ChatML shape, so the code path
that serves SmolLM2 serves this model unchanged.

Simplifications: one token per character (printable ASCII plus newline and tab); the vocab is
padded with reserved special tokens to a multiple of 64 so every id the model can emit
decodes. vLLM's CPU attention supports only head sizes in `VLLM_CPU_HEAD_SIZES`, so
`head_dim` is set explicitly (32 by default) rather than `hidden // heads` (16 here).

Run: python -m meshrl.inputs.models.tiny OUT_DIR
"""

from __future__ import annotations

import json
import string
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from meshrl.config.engine_limits import ENGINE_CPU_HEAD_SIZES
from meshrl.inputs.models.tokenizer_files import write_portable_tokenizer_files

SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
DEFAULT_CHARS = string.printable.replace("\x0b", "").replace("\x0c", "").replace("\r", "")
VLLM_CPU_HEAD_SIZES = ENGINE_CPU_HEAD_SIZES
VOCAB_MULTIPLE = 64

# SmolLM2-135M-Instruct's template shape (ChatML), without its default system prompt so tiny
# prompts stay short. Both render "<|im_start|>{role}\n{content}<|im_end|>\n" per message.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def tiny_vocab(chars: str = DEFAULT_CHARS) -> dict[str, int]:
    """Special tokens first, then one id per distinct char, padded to a multiple of 64."""
    tokens = list(SPECIAL_TOKENS) + list(dict.fromkeys(chars))
    reserved = (-len(tokens)) % VOCAB_MULTIPLE
    tokens += [f"<|reserved_{i}|>" for i in range(reserved)]
    return {tok: i for i, tok in enumerate(tokens)}


def build_tokenizer(chars: str = DEFAULT_CHARS):
    """A PreTrainedTokenizerFast: BPE with no merges (= one token per char), Fuse decoder."""
    vocab = tiny_vocab(chars)
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<pad>", fuse_unk=False))
    core.decoder = decoders.Fuse()  # join chars back with nothing in between
    specials = [tok for tok in vocab if tok in SPECIAL_TOKENS or tok.startswith("<|reserved_")]
    core.add_special_tokens(specials)
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token="<pad>",
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
        chat_template=CHATML_TEMPLATE,
        model_max_length=512,
        clean_up_tokenization_spaces=False,
    )


def tiny_config(tokenizer, *, hidden: int, layers: int, heads: int, kv_heads: int, head_dim: int, max_positions: int):
    """LlamaConfig sized for tests; tied embeddings like SmolLM2."""
    if head_dim not in VLLM_CPU_HEAD_SIZES:
        raise ValueError(
            f"head_dim={head_dim}: vLLM's CPU attention supports only {VLLM_CPU_HEAD_SIZES}; pick one of those"
        )
    if heads % kv_heads:
        raise ValueError(f"heads={heads} must be a multiple of kv_heads={kv_heads}")
    return LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=head_dim,
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        torch_dtype="float32",
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def build_tiny_model_dir(
    out_dir: str | Path,
    *,
    vocab: str = DEFAULT_CHARS,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    head_dim: int = 32,
    max_positions: int = 512,
    seed: int = 0,
) -> Path:
    """Write a loadable HF model dir (float32 safetensors + tokenizer) to `out_dir`; return it.

    `vocab` is the character set; every other id is a special or reserved token.
    """
    tokenizer = build_tokenizer(vocab)
    config = tiny_config(
        tokenizer,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        max_positions=max_positions,
    )
    return save_random_model(out_dir, LlamaForCausalLM, config, tokenizer, max_positions=max_positions, seed=seed)


def save_random_model(out_dir: str | Path, model_class, config, tokenizer, *, max_positions: int, seed: int) -> Path:
    """`model_class(config)` with seeded random float32 weights, saved with `tokenizer` as a
    complete HF model dir at `out_dir` (created); return it. Every tiny builder ends here."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model = model_class(config).to(torch.float32)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id
    )
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    write_portable_tokenizer_files(out, tokenizer, model_max_length=max_positions)
    _check_written(out)
    return out


def _check_written(out: Path) -> None:
    """Fail loudly if a file transformers or vLLM needs did not land."""
    needed = [
        "config.json",
        "model.safetensors",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ]
    missing = [name for name in needed if not (out / name).exists()]
    if missing:
        raise RuntimeError(
            f"tiny model dir {out} is missing {missing}; check the transformers version's save_pretrained output"
        )
    json.loads((out / "config.json").read_text())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m meshrl.inputs.models.tiny OUT_DIR")
    print(build_tiny_model_dir(sys.argv[1]))
