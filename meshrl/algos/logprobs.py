"""Per-token log-probs and entropy of response tokens under a causal LM.

Shared by the learner (policy log-probs, with gradients) and the reference service (frozen
reference log-probs, without). For a batch laid out as in `meshrl.algos.batch` (prompts
left-padded to width P, responses right-padded to width T) the token at response column t
is predicted by the logits at position P-1+t, so

    logprob[b, t] = log_softmax(logits[b, P-1+t] / temperature)[response_ids[b, t]]
    entropy[b, t] = logsumexp(z) - sum_v softmax(z)_v * z_v,   z = logits[b, P-1+t] / temperature

Memory: the model is asked only for the last T+1 positions (`logits_to_keep`), never for
logits over the prompt. The float32 log-softmax is computed over chunks of rows; under
autograd each chunk is checkpointed, so backward keeps the model-dtype logits but no
float32 [B, T, V] copy (the chunk's softmax is recomputed in backward instead).

Simplifications: every HF causal LM with a `logits_to_keep` forward argument (all current
decoder-only models) takes the fast path; others compute full logits and slice.
"""
from __future__ import annotations

import inspect
from typing import Mapping, NamedTuple

import torch
from torch.utils.checkpoint import checkpoint

CHUNK_ELEMENTS = 1 << 22  # logits elements per float32 chunk (16 MiB)


class ResponseLogprobs(NamedTuple):
    logprobs: torch.Tensor  # [B, T] float32, 0 on padding
    entropy: torch.Tensor | None  # [B, T] float32, 0 on padding; None unless asked


def _tensors(batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(prompt_ids, prompt_mask, response_ids, response_mask) from a batch or a mapping."""
    names = ("prompt_ids", "prompt_mask", "response_ids", "response_mask")
    if isinstance(batch, Mapping):
        missing = [n for n in names if n not in batch]
        if missing:
            raise KeyError(f"response_logprobs needs {names}; missing {missing}")
        return tuple(batch[n] for n in names)
    return tuple(getattr(batch, n) for n in names)


def _accepts_logits_to_keep(model) -> bool:
    try:
        return "logits_to_keep" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def response_logits(model, prompt_ids, prompt_mask, response_ids, response_mask) -> torch.Tensor:
    """Logits `[B, T, V]` (model dtype) at positions P-1 .. P+T-2, the ones predicting responses."""
    input_ids = torch.cat([prompt_ids, response_ids], dim=1)
    attention_mask = torch.cat([prompt_mask.long(), response_mask.long()], dim=1)
    position_ids = (attention_mask.cumsum(dim=1) - 1).clamp(min=0)
    t = response_ids.shape[1]
    extra = {"logits_to_keep": t + 1} if _accepts_logits_to_keep(model) else {}
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                use_cache=False, **extra)
    logits = out.logits if hasattr(out, "logits") else out[0]
    return logits[:, -(t + 1):-1, :]


def _chunk_stats(logits: torch.Tensor, ids: torch.Tensor, temperature: float,
                 with_entropy: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows [N, V] of logits, ids [N] → (log-prob of ids [N], entropy [N] or zeros)."""
    z = logits.float()
    if temperature != 1.0:
        z = z / temperature
    lse = torch.logsumexp(z, dim=-1)
    logprob = z.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - lse
    if not with_entropy:
        return logprob, torch.zeros_like(logprob)
    probs = torch.exp(z - lse.unsqueeze(-1))
    return logprob, lse - (probs * z).sum(dim=-1)


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor, *, temperature: float = 1.0,
                   with_entropy: bool = False, chunk_elements: int = CHUNK_ELEMENTS):
    """Log-probs (and entropy) of `ids [B, T]` under `logits [B, T, V]`, chunked over rows."""
    b, t, v = logits.shape
    flat_logits, flat_ids = logits.reshape(b * t, v), ids.reshape(b * t)
    rows = max(1, chunk_elements // v)
    grad = torch.is_grad_enabled() and logits.requires_grad
    parts = []
    for start in range(0, b * t, rows):
        args = (flat_logits[start:start + rows], flat_ids[start:start + rows], temperature, with_entropy)
        parts.append(checkpoint(_chunk_stats, *args, use_reentrant=False) if grad else _chunk_stats(*args))
    if not parts:
        empty = logits.new_zeros((b, t), dtype=torch.float32)
        return empty, empty.clone()
    logprob = torch.cat([p[0] for p in parts]).reshape(b, t)
    entropy = torch.cat([p[1] for p in parts]).reshape(b, t)
    return logprob, entropy


def response_logprobs(model, batch_or_tensors, *, temperature: float = 1.0,
                      with_entropy: bool = False,
                      chunk_elements: int = CHUNK_ELEMENTS) -> ResponseLogprobs:
    """Per-token log-probs `[B, T]` of the response tokens (and entropy if asked).

    `batch_or_tensors` is a `meshrl.algos.batch.RolloutBatch` or anything with (or a mapping of)
    `prompt_ids`, `prompt_mask`, `response_ids`, `response_mask`. Gradients flow when
    autograd is on; wrap in `torch.no_grad()` for old/reference log-probs.
    """
    prompt_ids, prompt_mask, response_ids, response_mask = _tensors(batch_or_tensors)
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for log-probs, got {temperature}")
    logits = response_logits(model, prompt_ids, prompt_mask, response_ids, response_mask)
    logprob, entropy = token_logprobs(logits, response_ids, temperature=temperature,
                                      with_entropy=with_entropy, chunk_elements=chunk_elements)
    mask = response_mask.to(logprob.dtype)
    return ResponseLogprobs(logprob * mask, entropy * mask if with_entropy else None)


def sequence_logprobs(token_logprobs_: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Summed log-prob per sequence `[B]`: log p(response | prompt) (DPO's log-likelihood)."""
    return (token_logprobs_ * response_mask).sum(dim=-1)
