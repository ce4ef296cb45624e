"""One thread for all of the learner's torch work: train steps, weight export, checkpoints.

    metrics = await in_trainer_thread(train_step, batch, step)

Why not `asyncio.to_thread`: the default executor hands each call to whichever of its
threads is idle, and glibc gives each thread its own malloc arena. A train step frees its
activations into the arena of the thread that ran it; the next step, on another thread,
cannot reuse that memory and grows an arena of its own, so the learner's memory grew step
after step (docs/benchmarks.md, "Memory of the whole mesh"). On one thread the freed memory
is reused step after step.
Torch's grad mode and autocast state are per thread too, so one thread also keeps them
the same for every call.

Speed too: torch work on a second thread gives that thread an OpenMP team of its own, and
the trainer's teams then run slower: casting the weights to bf16 on the event loop's thread
between steps slowed every later step's forward and backward, and the same cast on this
thread did not (docs/benchmarks.md, "meshrl side by side with TRL"). So the model is built,
restored and trained here, and the weights for a push are staged here (cast and copied into
host buffers); the file write and its digest — plain I/O and hashing, no torch kernels —
then run on the publisher's export thread while the next step trains
(services/learner/weights.py).

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
