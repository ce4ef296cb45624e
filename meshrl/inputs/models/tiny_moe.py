"""Build a tiny random mixture-of-experts model (Qwen3-MoE architecture) in code, with the
same character-level ChatML tokenizer as `tiny.py`: what the MoE tests train with GSPO.

Qwen3-MoE because both transformers and vLLM 0.32 (CPU included) implement it: every layer's
MLP is `experts` small experts of which a softmax router picks `experts_per_token` per token
(renormalised top-k), and the model returns the router's logits (output_router_logits) for
the load-balancing loss. A few hundred thousand parameters; head_dim 32 for vLLM's CPU
attention.

Run: python -m meshrl.inputs.models.tiny_moe OUT_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

from meshrl.inputs.models.tiny import DEFAULT_CHARS, build_tokenizer, save_random_model


def tiny_moe_config(
    tokenizer,
    *,
    hidden: int,
    layers: int,
    heads: int,
    kv_heads: int,
    experts: int,
    experts_per_token: int,
    expert_width: int,
    max_positions: int,
):
    return Qwen3MoeConfig(
        **_expert_settings(experts, experts_per_token, expert_width),
        **_token_ids(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=32,
        max_position_embeddings=max_positions,
        rms_norm_eps=1e-5,
        tie_word_embeddings=True,
        torch_dtype="float32",
    )


def _expert_settings(experts: int, experts_per_token: int, expert_width: int) -> dict:
    """Every layer's MLP a mixture of experts, its top-k router renormalised, the balancing loss on."""
    return dict(
        moe_intermediate_size=expert_width,
        num_experts=experts,
        num_experts_per_tok=experts_per_token,
        norm_topk_prob=True,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        router_aux_loss_coef=0.001,
    )


def _token_ids(tokenizer) -> dict:
    return dict(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )


def build_tiny_moe_model_dir(
    out_dir: str | Path,
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    experts: int = 8,
    experts_per_token: int = 2,
    expert_width: int = 64,
    max_positions: int = 512,
    seed: int = 0,
) -> Path:
    """Write a loadable HF Qwen3-MoE model dir (float32 safetensors + tokenizer); return it."""
    tokenizer = build_tokenizer(DEFAULT_CHARS)
    config = tiny_moe_config(
        tokenizer,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        experts=experts,
        experts_per_token=experts_per_token,
        expert_width=expert_width,
        max_positions=max_positions,
    )
    return save_random_model(out_dir, Qwen3MoeForCausalLM, config, tokenizer, max_positions=max_positions, seed=seed)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m meshrl.inputs.models.tiny_moe OUT_DIR")
    print(build_tiny_moe_model_dir(sys.argv[1]))
