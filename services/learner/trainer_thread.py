"""One thread for all of the learner's torch work: train steps, weight export, checkpoints.

    metrics = await in_trainer_thread(train_step, batch, step)

Why not `asyncio.to_thread`: the default executor hands each call to whichever of its
threads is idle, and glibc gives each thread its own malloc arena. A train step frees its
activations (≈2 GB for the main job) into the arena of the thread that ran it; the next
step, on another thread, cannot reuse that memory and grows an arena of its own. Measured
in the main job (SmolLM2-135M, 64 × 58 tokens): the learner's RSS went 4.4 GiB after step 0
→ 6.7 GiB by step 3 → 7.0 GiB. On one thread the freed memory is reused step after step.
Torch's grad mode and autocast state are per thread too, so one thread also keeps them
the same for every call.

Speed too: torch work on a second thread gives that thread an OpenMP team of its own, and
the trainer's teams then run slower. Measured with SmolLM2-135M (bf16, 16 × ≤ 76 tokens, 2
cores): casting the weights to bf16 on the event loop's thread between steps took each later
step's forward from 0.53 to 0.70 s and backward from 1.3 to 1.5 s; the same cast on this
thread left them as they were. So the model is built, restored and trained here, and the
weights for a push are staged here (cast and copied into host buffers); the file write and
its digest — plain I/O and hashing, no torch kernels — then run on the publisher's export
thread while the next step trains (services/learner/weights.py).

The event loop stays free for NATS, gRPC and the health watch while the thread computes.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

_TRAINER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainer")


async def in_trainer_thread(fn: Callable[..., Any], /, *args, **kwargs) -> Any:
    """Run `fn(*args, **kwargs)` on the learner's one trainer thread; await its result."""
    call = functools.partial(fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_TRAINER, call)
