"""Attention for packed rows without a dense N×N mask: each sequence attends only to itself.

`forward: packed` puts every sequence of a micro-batch into one row of N tokens. With
transformers' `sdpa`/`eager` a packed row gets a dense block-diagonal mask built from the
position ids: N² booleans, and attention computed over all N² pairs — the work packing was
meant to save, which is why packed rows ran slower than padded ones on a GPU
(docs/benchmarks.md, "The learner on a GPU").

`VARLEN` ("meshrl_varlen") is registered with transformers' `AttentionInterface`, and with
its `AttentionMaskInterface` as a mask function that builds no mask for a packed row (no 2-D
attention mask given) and defers to sdpa's otherwise. The attention function then, for a
packed row, reads the sequence boundaries the caller passes (`cu_seq_lens_q`: cumulative
lengths [S+1], int32, the same keyword transformers' flash-attention path takes) and runs:

- on CUDA in bf16/fp16: `torch.nn.attention.varlen.varlen_attn`, torch's own FlashAttention
  varlen kernel (causal, GQA), FLOPs Σ nᵢ² instead of N²;
- elsewhere (CPU, fp32): causal SDPA on each sequence's slice in turn — no N² mask, no N²
  scores; its memory is measured against sdpa's dense mask by
  `benchmarks/gpu_train_step.py --tiny` and checked in `tests/unit/algos/test_varlen_attention.py`.

Rows with a 2-D attention mask (padded, shared_prefix, the critic) go to transformers' sdpa
unchanged, as does a row attending to a KV cache, so the one setting serves every forward.
A packed row without boundaries is one causal sequence.

Simplifications: no attention dropout, softcapping, sliding windows or sinks (the models
this learner trains use none during training); `set_varlen_attention` refuses a model whose
attention does not go through transformers' `AttentionInterface`. transformers is imported
at the top: a learner imports this module only when it switches a model to varlen; the
boundaries themselves are made without it (`meshrl.algos.forward.sequence_bounds`).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn.attention.varlen import varlen_attn
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

VARLEN = "meshrl_varlen"
_FLASH_DTYPES = (torch.float16, torch.bfloat16)


def _mask(*args, attention_mask=None, **kwargs):
    """sdpa's mask when a 2-D attention mask was given; none for a packed row."""
    if attention_mask is None:
        return None
    return sdpa_mask(*args, attention_mask=attention_mask, **kwargs)


def varlen_attention(
    module,
    query,
    key,
    value,
    attention_mask,
    dropout: float = 0.0,
    scaling: float | None = None,
    cu_seq_lens_q: torch.Tensor | None = None,
    max_length_q: int | None = None,
    **kwargs,
):
    """transformers attention: query [B, Hq, N, D], key/value [B, Hkv, N, D] → ([B, N, Hq, D], None)."""
    if attention_mask is not None or query.shape[0] != 1 or query.shape[2] != key.shape[2]:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    n = query.shape[2]
    bounds = (
        cu_seq_lens_q if cu_seq_lens_q is not None else torch.tensor([0, n], dtype=torch.int32, device=query.device)
    )
    gqa = query.shape[1] != key.shape[1]
    if query.is_cuda and query.dtype in _FLASH_DTYPES:
        return _flash_varlen(query, key, value, bounds, max_length_q or n, scaling, gqa), None
    return _per_sequence(query, key, value, bounds, scaling, gqa), None


def _flash_varlen(query, key, value, bounds, max_len: int, scaling, gqa: bool) -> torch.Tensor:
    q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # [N, H, D]
    out = varlen_attn(q, k, v, bounds, bounds, max_len, max_len, scale=scaling, window_size=(-1, 0), enable_gqa=gqa)
    return out.unsqueeze(0)  # [1, N, Hq, D]


def _per_sequence(query, key, value, bounds, scaling, gqa: bool) -> torch.Tensor:
    edges = bounds.tolist()
    parts = [
        F.scaled_dot_product_attention(
            query[:, :, a:b], key[:, :, a:b], value[:, :, a:b], is_causal=True, scale=scaling, enable_gqa=gqa
        )
        for a, b in zip(edges[:-1], edges[1:])
        if b > a
    ]
    return torch.cat(parts, dim=2).transpose(1, 2)  # [1, N, Hq, D]


def register_varlen_attention() -> None:
    """Make `VARLEN` a transformers attention implementation (idempotent)."""
    AttentionInterface.register(VARLEN, varlen_attention)
    AttentionMaskInterface.register(VARLEN, _mask)


def set_varlen_attention(model) -> None:
    """Switch a transformers model to `VARLEN`; ValueError for a model that cannot."""
    if not hasattr(model, "set_attn_implementation"):
        raise ValueError(
            f"trainer.attention=varlen: {type(model).__name__} is not a transformers "
            f"model with set_attn_implementation(); set trainer.attention=auto"
        )
    register_varlen_attention()
    model.set_attn_implementation(VARLEN)
    if getattr(model.config, "_attn_implementation", None) != VARLEN:
        raise ValueError(
            f"trainer.attention=varlen: {type(model).__name__} kept attention "
            f"{model.config._attn_implementation!r} (its attention does not go "
            f"through transformers' AttentionInterface); set trainer.attention=auto"
        )
