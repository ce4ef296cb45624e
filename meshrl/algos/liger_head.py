"""Per-token log-probs through Liger-Kernel's fused linear cross-entropy (`trainer.lm_head: liger`).

    logprob[n] = −CE(hidden[n] · Wᵀ / T + b / T, ids[n])      (reduction="none")

Liger (Hsu et al. 2024, "Liger Kernel: Efficient Triton Kernels for LLM Training",
arXiv:2410.10989) computes the head and the cross-entropy chunk by chunk in Triton, writing
the logits' gradient in place and never keeping a chunk's logits for backward. The
temperature is folded into the input (logits / T = (hidden / T) · Wᵀ), the bias likewise.
With reduction="none" its backward recomputes the chunks and weights each token by its own
upstream gradient; releases before 0.8.2 scaled the summed weight gradient instead, which
is wrong for per-token losses (linkedin/Liger-Kernel#1298), so they are refused here rather
than used silently wrong.

It is a GPU kernel: on CPU it is unavailable with a message saying so (Triton's
interpreter, `TRITON_INTERPRET=1`, runs it on CPU tensors slowly; the tests use that to
compare it with our chunked head).
"""

from __future__ import annotations

import importlib.metadata
import os

import torch

MIN_VERSION = (0, 8, 2)


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("+")[0].split(".")[:3] if part.isdigit())


def liger_unavailable(device: torch.device) -> str | None:
    """None when Liger's fused head can run on `device`; else why not and what to do."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if device.type != "cuda" and not interpreted:
        return f"it is a Triton GPU kernel and the learner runs on {device.type}; use trainer.lm_head=chunked (or auto)"
    try:
        version = importlib.metadata.version("liger-kernel")
    except importlib.metadata.PackageNotFoundError:
        return "liger-kernel is not installed: pip install 'liger-kernel>=0.8.2', or trainer.lm_head=chunked"
    if _version_tuple(version) < MIN_VERSION:
        return (
            f"liger-kernel {version} computes wrong weight gradients for per-token losses "
            f"(reduction='none', fixed in 0.8.2: linkedin/Liger-Kernel#1298); upgrade it, "
            f"or trainer.lm_head=chunked"
        )
    return None


def liger_logprobs(
    head: torch.nn.Linear, hidden: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """log π(ids[n] | hidden[n]) [N] float32 for rows `hidden [N, H]` (module docstring)."""
    from liger_kernel.ops.fused_linear_cross_entropy import (
        LigerFusedLinearCrossEntropyFunction,
    )  # lazy: optional GPU extra

    bias = head.bias
    if temperature != 1.0:
        hidden = hidden / temperature
        bias = None if bias is None else bias / temperature
    loss = LigerFusedLinearCrossEntropyFunction.apply(
        hidden.contiguous(), head.weight, ids.contiguous(), bias, None, -100, 0.0, 0.0, "none"
    )[0]
    return -loss.float()
