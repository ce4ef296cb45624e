"""Shorten how long vLLM's worker busy-waits for its next order once generation stops.

vLLM's multiprocess executor (forced on CPU) hands each engine step to the worker through
a shared-memory ring; the worker's reader spins on it with `sched_yield()` for a whole
second after its last read (`SpinCondition.busy_loop_s = 1`) before it sleeps on a zmq
poll. On a GPU host that second costs one idle core. On a shared CPU host it is the
learner's: in strictly on-policy mode the learner starts training the moment the last
group is generated, so for its first second it shares the cores with a spinning thread,
and on a 2-core host its forward took several times as long as alone
(docs/benchmarks.md, "meshrl side by side with TRL": "vLLM's worker spins after every batch").

Between two decode steps of one batch the worker waits well under a millisecond, so a
short spin keeps its hand-off latency; after that it sleeps until the engine notifies it.
The patch wraps `SpinCondition.wait` (looked up at call time, so rings created before this
module was imported are covered too). It is applied where our worker extension is
imported, i.e. only inside vLLM's worker process.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

IDLE_SPIN_ENV = "MESHRL_VLLM_IDLE_SPIN_S"
DEFAULT_IDLE_SPIN_S = 0.02


def idle_spin_s() -> float:
    """Seconds the worker may spin after its last read: $MESHRL_VLLM_IDLE_SPIN_S or 0.02."""
    raw = os.environ.get(IDLE_SPIN_ENV, "")
    try:
        value = float(raw) if raw else DEFAULT_IDLE_SPIN_S
    except ValueError:
        raise ValueError(f"{IDLE_SPIN_ENV}={raw!r} is not a number of seconds (e.g. 0.02)") from None
    if value < 0:
        raise ValueError(f"{IDLE_SPIN_ENV}={raw!r} must be ≥ 0 seconds")
    return value


def shorten_idle_spin(limit_s: float | None = None) -> bool:
    """Cap vLLM's shared-memory reader spin at `limit_s`; False where vLLM has no such ring."""
    try:
        from vllm.distributed.device_communicators.shm_broadcast import (
            SpinCondition,
        )  # lazy: only in vLLM's worker process; a vLLM without it is handled below
    except ImportError:
        return False
    if getattr(SpinCondition.wait, "_meshrl_capped", False):
        return True
    limit = idle_spin_s() if limit_s is None else limit_s
    original_wait = SpinCondition.wait

    def wait(self, timeout_ms=None):
        self.busy_loop_s = min(self.busy_loop_s, limit)
        return original_wait(self, timeout_ms)

    wait._meshrl_capped = True
    SpinCondition.wait = wait
    log.info("vLLM worker: idle spin capped at %.3f s (was 1 s; %s overrides)", limit, IDLE_SPIN_ENV)
    return True
