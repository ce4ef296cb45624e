"""A model's shape for memory planning: exact parameter counts from its architecture.

The model is built from its config on torch's meta device (no weights read, no memory
used), so any architecture transformers knows — dense or mixture-of-experts — is counted
exactly, including tied embeddings. The per-token activation sizes come from the config's
dimensions (hidden, KV heads × head dim, MLP width, experts routed per token), into a
`ModelShape` (memory.py, whose arithmetic reads it). torch and transformers are imported at
the top: only the plan report (`meshrl plan`, imported by that command alone) reads shapes.
"""

from __future__ import annotations

import torch
from transformers import AutoConfig, AutoModelForCausalLM

from meshrl.plan.memory import ModelShape


def hf_config(path: str, gguf_file: str | None = None):
    kwargs = {"gguf_file": gguf_file} if gguf_file else {}
    return AutoConfig.from_pretrained(path, **kwargs)


def model_shape(config) -> ModelShape:
    """The shape of a transformers causal-LM config (see module docstring)."""
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    heads = config.num_attention_heads
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    layers = getattr(getattr(model, "model", model), "layers", [])
    linears = tuple(
        (name, m.in_features, m.out_features) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)
    )
    return ModelShape(
        params=sum(p.numel() for p in model.parameters()),
        layers=config.num_hidden_layers,
        hidden=config.hidden_size,
        kv_dim=kv_heads * head_dim,
        mlp_width=mlp_width(config),
        vocab=config.vocab_size,
        attention_heads=heads,
        kv_heads=kv_heads,
        largest_layer_params=max((sum(p.numel() for p in layer.parameters()) for layer in layers), default=0),
        linear_shapes=linears,
    )


def mlp_width(config) -> int:
    """The MLP width one token passes through: the dense intermediate size, or for an MoE
    the experts it is routed to (plus a shared expert where the architecture has one)."""
    experts_per_token = getattr(config, "num_experts_per_tok", None)
    if experts_per_token and getattr(config, "moe_intermediate_size", None):
        shared = getattr(config, "shared_expert_intermediate_size", 0) or 0
        return experts_per_token * config.moe_intermediate_size + shared
    return config.intermediate_size
