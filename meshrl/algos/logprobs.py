"""Per-token log-probs and entropy of response tokens under a causal LM.

Shared by the learner (policy log-probs, with gradients) and the reference service (frozen
reference log-probs, without). For a batch laid out as in `meshrl.algos.batch` (prompts
left-padded to width P, responses right-padded to width T) the token at response column t
is predicted by the logits at position P-1+t, so

    logprob[b, t] = log_softmax(logits[b, P-1+t] / temperature)[response_ids[b, t]]
    entropy[b, t] = logsumexp(z) - sum_v softmax(z)_v * z_v,   z = logits[b, P-1+t] / temperature
    sum_pi_squared[b, t] = Σ_v softmax(z)_v² = exp(logsumexp(2z) - 2·logsumexp(z))
                           (only when asked: the optimal-token-baseline estimator's input)

Memory and work: for Hugging Face models whose logits are `lm_head(hidden)` the decoder's
hidden states are taken at response positions (`meshrl.algos.forward`) and the LM head
plus float32 log-softmax run only on the real (unpadded) response tokens, in chunks of
rows; under autograd each chunk is checkpointed, so neither pass ever holds a [B, T, V]
tensor (the chunk's logits are recomputed in backward). Other models are asked only for
the last T+1 positions (`logits_to_keep`) and the log-softmax is chunked the same way.
The chunk size (`chunk_elements`, logits per chunk) defaults to what the tensors' device
allows (`meshrl.algos.head_plan.chunk_elements_for`); `head_kernel="liger"` runs the head
through Liger-Kernel's fused linear cross-entropy instead (`meshrl.algos.liger_head`).

Precision under bf16 autocast: each chunk casts the head weight to bf16 itself, so each
chunk's weight gradient is cast back to float32 and summed into `.grad` in float32.
(Autocast's own weight cache would share one cast across chunks, and autograd would then
sum every chunk's gradient in bf16, an error that grows with the number of chunks:
`tests/unit/algos/test_head_precision.py`; docs/benchmarks.md, "The learner on a GPU".)

Observation tokens (a multi-turn episode's environment answers inside the response) are
attended to like every response token but never scored: a batch's `loss_mask` (when it has
one) picks the tokens that get a log-prob, an entropy and Σπ²; elsewhere they are 0 and,
on the split-head path, the LM head never even runs there.

Simplifications: models without `logits_to_keep` compute full logits and slice.
"""

from __future__ import annotations

import inspect
from typing import Mapping, NamedTuple

import torch
from torch.utils.checkpoint import checkpoint

from meshrl.algos.forward import response_hidden, split_head
from meshrl.algos.head_plan import chunk_elements_for
from meshrl.algos.liger_head import liger_logprobs


class ResponseLogprobs(NamedTuple):
    logprobs: torch.Tensor  # [B, T] float32, 0 on padding
    entropy: torch.Tensor | None  # [B, T] float32, 0 on padding; None unless asked


class ResponseStats(NamedTuple):
    logprobs: torch.Tensor  # [B, T] float32, 0 on padding
    entropy: torch.Tensor | None  # [B, T] float32, 0 on padding; None unless asked
    sum_pi_squared: torch.Tensor | None  # [B, T] float32, 0 on padding; None unless asked


def _tensors(batch) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(prompt_ids, prompt_mask, response_ids, response_mask) from a batch or a mapping."""
    names = ("prompt_ids", "prompt_mask", "response_ids", "response_mask")
    if isinstance(batch, Mapping):
        missing = [n for n in names if n not in batch]
        if missing:
            raise KeyError(f"response_logprobs needs {names}; missing {missing}")
        return tuple(batch[n] for n in names)
    return tuple(getattr(batch, n) for n in names)


def _score_mask(batch, response_mask: torch.Tensor) -> torch.Tensor:
    """The response tokens to score: the batch's `loss_mask` (the model's own tokens) when it
    has one, else every real response token."""
    mask = batch.get("loss_mask") if isinstance(batch, Mapping) else getattr(batch, "loss_mask", None)
    return response_mask if mask is None else mask


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
    out = model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids, use_cache=False, **extra)
    logits = out.logits if hasattr(out, "logits") else out[0]
    return logits[:, -(t + 1) : -1, :]


def _chunk_stats(
    logits: torch.Tensor, ids: torch.Tensor, temperature: float, with_entropy: bool, with_sum_pi_squared: bool = False
):
    """Rows [N, V] of logits, ids [N] → (log-prob of ids [N], entropy [N], Σπ² [N]); the
    last two are zeros unless asked."""
    z = logits.float()
    if temperature != 1.0:
        z = z / temperature
    lse = torch.logsumexp(z, dim=-1)
    logprob = z.gather(-1, ids.unsqueeze(-1)).squeeze(-1) - lse
    entropy = sum_pi_squared = torch.zeros_like(logprob)
    if with_entropy:
        probs = torch.exp(z - lse.unsqueeze(-1))
        entropy = lse - (probs * z).sum(dim=-1)
    if with_sum_pi_squared:  # in log space: no [N, V] tensor of squared probabilities
        sum_pi_squared = torch.exp(torch.logsumexp(2.0 * z, dim=-1) - 2.0 * lse)
    return logprob, entropy, sum_pi_squared


def token_stats(
    logits: torch.Tensor,
    ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    with_sum_pi_squared: bool = False,
    chunk_elements: int | None = None,
):
    """(log-prob, entropy, Σπ²) `[B, T]` each of `ids [B, T]` under `logits [B, T, V]`,
    chunked over rows; entropy and Σπ² are zeros unless asked."""
    b, t, v = logits.shape
    flat_logits, flat_ids = logits.reshape(b * t, v), ids.reshape(b * t)
    rows = max(1, (chunk_elements or chunk_elements_for(logits.device)) // v)
    grad = torch.is_grad_enabled() and logits.requires_grad
    parts = []
    for start in range(0, b * t, rows):
        args = (
            flat_logits[start : start + rows],
            flat_ids[start : start + rows],
            temperature,
            with_entropy,
            with_sum_pi_squared,
        )
        parts.append(checkpoint(_chunk_stats, *args, use_reentrant=False) if grad else _chunk_stats(*args))
    if not parts:
        empty = logits.new_zeros((b, t), dtype=torch.float32)
        return empty, empty.clone(), empty.clone()
    return tuple(torch.cat([p[i] for p in parts]).reshape(b, t) for i in range(3))


def token_logprobs(
    logits: torch.Tensor,
    ids: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_elements: int | None = None,
):
    """Log-probs (and entropy) of `ids [B, T]` under `logits [B, T, V]`, chunked over rows."""
    return token_stats(logits, ids, temperature=temperature, with_entropy=with_entropy, chunk_elements=chunk_elements)[
        :2
    ]


FORWARDS = ("padded", "shared_prefix", "packed")


def response_logprobs(
    model,
    batch_or_tensors,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    chunk_elements: int | None = None,
    forward: str = "padded",
    head_kernel: str = "chunked",
) -> ResponseLogprobs:
    """Per-token log-probs `[B, T]` of the response tokens (and entropy if asked).

    `batch_or_tensors`: a `RolloutBatch` or anything with (or a mapping of) `prompt_ids`,
    `prompt_mask`, `response_ids`, `response_mask` (and optionally `loss_mask`: only those tokens
    are scored, the rest are 0). Gradients flow when autograd is on. `forward`
    (`meshrl.algos.forward`): `padded`, `shared_prefix` (each distinct prompt once) or `packed`
    (no padding), same values and gradients, falling back to `padded` where a model needs it.
    `chunk_elements` (None: from the device) and `head_kernel` (`chunked` | `liger`): the LM
    head's plan (`meshrl.algos.head_plan`).
    """
    stats = response_stats(
        model,
        batch_or_tensors,
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_elements=chunk_elements,
        forward=forward,
        head_kernel=head_kernel,
    )
    return ResponseLogprobs(stats.logprobs, stats.entropy)


def response_stats(
    model,
    batch_or_tensors,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    with_sum_pi_squared: bool = False,
    chunk_elements: int | None = None,
    forward: str = "padded",
    head_kernel: str = "chunked",
) -> ResponseStats:
    """`response_logprobs` plus, when asked, Σ_v π(v)² per response token `[B, T]` (the
    optimal-token baseline's input), from the same chunks of logits."""
    tensors = _tensors(batch_or_tensors)
    scored = _score_mask(batch_or_tensors, tensors[3])
    _check_stats_args(temperature, forward)
    wanted = dict(
        temperature=temperature,
        with_entropy=with_entropy,
        with_sum_pi_squared=with_sum_pi_squared,
        chunk_elements=chunk_elements,
    )
    parts = split_head(model)
    if parts is None:
        stats = token_stats(response_logits(model, *tensors), tensors[2], **wanted)
    else:
        stats = split_head_stats(*parts, tensors, scored, forward, head_kernel, **wanted)
    return scored_only(stats, scored, with_entropy, with_sum_pi_squared)


def scored_only(stats, scored: torch.Tensor, with_entropy: bool, with_sum_pi_squared: bool) -> ResponseStats:
    """The stats zeroed outside the scored tokens; those not asked for are None."""
    logprob, entropy, sum_pi_squared = stats
    mask = scored.to(logprob.dtype)
    return ResponseStats(
        logprob * mask, entropy * mask if with_entropy else None, sum_pi_squared * mask if with_sum_pi_squared else None
    )


def _check_stats_args(temperature: float, forward: str) -> None:
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0 for log-probs, got {temperature}")
    if forward not in FORWARDS:
        raise ValueError(f"unknown forward {forward!r}; choose one of {FORWARDS}")


def split_head_stats(decoder, head, tensors, scored: torch.Tensor, forward: str, kernel: str, **wanted):
    """(log-prob, entropy, Σπ²) `[B, T]` from the decoder's hidden states at response positions,
    the LM head run on the scored tokens only (`head_logprobs`)."""
    hidden = response_hidden(decoder, *tensors, forward)
    return head_logprobs(head, hidden, tensors[2], scored, kernel=kernel, **wanted)


def _head_chunk(head, hidden, ids, temperature: float, with_entropy: bool, with_sum_pi_squared: bool):
    return _chunk_stats(own_cast_linear(head, hidden), ids, temperature, with_entropy, with_sum_pi_squared)


def own_cast_linear(head: torch.nn.Linear, hidden: torch.Tensor) -> torch.Tensor:
    """`head(hidden)`, casting the weight to autocast's dtype here rather than through
    autocast's cache, so this chunk's weight gradient reaches `.grad` in the weight's own
    dtype (module docstring, "Precision")."""
    device = hidden.device.type
    if not torch.is_autocast_enabled(device):
        return head(hidden)
    dtype = torch.get_autocast_dtype(device)
    bias = None if head.bias is None else head.bias.to(dtype)
    with torch.autocast(device_type=device, enabled=False):
        return torch.nn.functional.linear(hidden.to(dtype), head.weight.to(dtype), bias)


def head_logprobs(
    head,
    hidden: torch.Tensor,
    ids: torch.Tensor,
    mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    with_sum_pi_squared: bool = False,
    chunk_elements: int | None = None,
    kernel: str = "chunked",
):
    """LM head + log-softmax on the real response rows of `hidden [B, T, H]` only, in chunks:
    (log-prob, entropy, Σπ²) `[B, T]` each, entropy and Σπ² zeros unless asked; padding rows
    never reach the head (`chunked_rows` checkpoints each chunk, `liger_rows` fuses them).
    """
    b, t = ids.shape
    keep = mask.reshape(-1) > 0
    rows_h, rows_id = hidden.reshape(b * t, hidden.shape[-1])[keep], ids.reshape(-1)[keep]
    zeros = hidden.new_zeros((b * t,), dtype=torch.float32)
    if rows_h.shape[0] == 0:
        return tuple(zeros.reshape(b, t).clone() for _ in range(3))
    rows = max(1, (chunk_elements or chunk_elements_for(hidden.device)) // head.weight.shape[0])
    if kernel == "liger":
        stats = liger_rows(head, rows_h, rows_id, temperature, with_entropy, with_sum_pi_squared, rows)
    else:
        stats = chunked_rows(head, rows_h, rows_id, temperature, with_entropy, with_sum_pi_squared, rows)
    return tuple(zeros.masked_scatter(keep, part).reshape(b, t) for part in stats)


def chunked_rows(head, rows_h, rows_id, temperature, with_entropy, with_sum_pi_squared, rows):
    """(log-prob, entropy, Σπ²) [N] of the rows, `rows` at a time, checkpointed under autograd."""
    grad = torch.is_grad_enabled() and rows_h.requires_grad
    parts = []
    for start in range(0, rows_h.shape[0], rows):
        args = (
            head,
            rows_h[start : start + rows],
            rows_id[start : start + rows],
            temperature,
            with_entropy,
            with_sum_pi_squared,
        )
        parts.append(checkpoint(_head_chunk, *args, use_reentrant=False) if grad else _head_chunk(*args))
    return tuple(torch.cat([p[i] for p in parts]) for i in range(3))


def liger_rows(head, rows_h, rows_id, temperature, with_entropy, with_sum_pi_squared, rows):
    """Log-probs from Liger's fused head; entropy / Σπ² (when asked) detached, from our chunks."""
    logprob = liger_logprobs(head, rows_h, rows_id, temperature)
    extra = torch.zeros_like(logprob)
    entropy = sum_pi_squared = extra
    if with_entropy or with_sum_pi_squared:
        with torch.no_grad():
            _, entropy, sum_pi_squared = chunked_rows(
                head, rows_h, rows_id, temperature, with_entropy, with_sum_pi_squared, rows
            )
    return logprob, entropy, sum_pi_squared


def sequence_logprobs(token_logprobs_: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Summed log-prob per sequence `[B]`: log p(response | prompt) (DPO's log-likelihood)."""
    return (token_logprobs_ * response_mask).sum(dim=-1)
