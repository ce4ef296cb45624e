"""How the LM head + log-softmax runs: which kernel, and how many logits per chunk.

The head is applied to the real response rows only, in chunks of rows, each checkpointed
(`meshrl.algos.logprobs.head_logprobs`). Each chunk costs a fixed amount besides its rows:
in backward the head weight is cast, read twice and a full-size weight gradient written
(≈4.7 GB of memory traffic per chunk for a 151,936 × 1,536 head). So the chunk should be
as large as memory allows:

- `cpu`: `CPU_CHUNK_ELEMENTS` = 4M logits (16 MiB of float32), the constant the learner
  always had (`trainer.lm_head_chunk` sets another);
- `cuda`: `memory` × the device's free memory at start ÷ `BYTES_PER_LOGIT`, the peak bytes
  one chunk's forward + backward holds per logit (20: bf16 logits, their float32 copy, the
  softmax and the gradients under bf16 autocast; torch's MemTracker peak, rounded up, is in
  docs/benchmarks.md, "The learner on a GPU", and `tests/unit/algos/test_head_plan.py`
  checks it holds). For a 1.5B Qwen on a GPU with ~100 GB free and `memory: 0.1`, that is
  ~500M logits = ~3,300 rows of a 151,936-word vocabulary per chunk instead of 27.

Kernels (`trainer.lm_head`): `chunked` (ours, above) or `liger` — Liger-Kernel's fused
linear cross-entropy (`meshrl.algos.liger_head`), which never materialises a chunk's
logits for backward. `liger` gives log-probs only: entropy (and Σπ²) come detached from a
no-grad pass, so it cannot serve a loss with an entropy bonus. `auto` is `chunked` until
the GPU benchmark (`benchmarks/gpu_train_step.py`) shows Liger faster: a lever is switched
on by a measurement, not presumed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

CPU_CHUNK_ELEMENTS = 1 << 22
BYTES_PER_LOGIT = 20
KERNELS = ("chunked", "liger")


@dataclass(frozen=True)
class HeadPlan:
    kernel: str  # "chunked" | "liger"
    chunk_elements: int  # logits (rows × vocab) per chunk
    why: str


def free_device_bytes(device: torch.device) -> int:
    return torch.cuda.mem_get_info(device)[0]


def chunk_elements_for(device: torch.device | str, memory: float = 0.1, free_bytes: int | None = None) -> int:
    """Logits per chunk on `device`: the CPU constant, or `memory` × free device memory ÷
    `BYTES_PER_LOGIT` on an accelerator (`free_bytes` overrides the query)."""
    device = torch.device(device)
    if device.type == "cpu":
        return CPU_CHUNK_ELEMENTS
    free = free_device_bytes(device) if free_bytes is None else free_bytes
    return max(CPU_CHUNK_ELEMENTS, int(free * memory) // BYTES_PER_LOGIT)


def plan_head(
    kernel: str,
    chunk: int | str,
    memory: float,
    device: torch.device | str,
    *,
    entropy_in_loss: bool = False,
    free_bytes: int | None = None,
) -> HeadPlan:
    """The plan for `trainer.lm_head`, `trainer.lm_head_chunk`, `trainer.lm_head_memory`.

    An explicit `liger` that cannot run here raises ValueError naming why and the fix.
    """
    elements, size = _chunk_size(chunk, memory, device, free_bytes)
    if kernel in ("auto", "chunked"):
        return HeadPlan("chunked", elements, f"chunked ({kernel}); {size}")
    if kernel != "liger":
        raise ValueError(f"trainer.lm_head={kernel!r}; expected auto, {', '.join(KERNELS)}")
    if problem := _liger_problem(device, entropy_in_loss):
        raise ValueError(f"trainer.lm_head=liger cannot run: {problem}")
    return HeadPlan("liger", elements, f"liger; entropy from a no-grad pass of {size}")


def _chunk_size(chunk: int | str, memory: float, device, free_bytes: int | None) -> tuple[int, str]:
    """(logits per chunk, how the plan names it): from the device for "auto", else as set."""
    elements = chunk_elements_for(device, memory, free_bytes) if chunk == "auto" else int(chunk)
    if elements < 1:
        raise ValueError(f"trainer.lm_head_chunk={chunk!r}: need at least 1 logit per chunk")
    return elements, f"{elements:,} logits per chunk ({'auto' if chunk == 'auto' else 'set'})"


def _liger_problem(device, entropy_in_loss: bool) -> str | None:
    """Why Liger's fused head cannot run here, or None."""
    from meshrl.algos.liger_head import liger_unavailable  # lazy: cycle-free, imports liger only when asked

    problem = liger_unavailable(torch.device(device))
    if problem is None and entropy_in_loss:
        problem = (
            "Liger's fused head gives log-probs only (entropy comes detached), but "
            "algorithm.entropy_coeff is not 0: set it to 0 or trainer.lm_head=chunked"
        )
    return problem
