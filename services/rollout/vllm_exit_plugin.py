"""A vLLM general plugin: vLLM's engine-core and worker processes leave without their teardown.

vLLM (CPU) spawns an engine-core process and its worker processes. On shutdown the front
end gives the engine core 5 s (`vllm.v1.utils.shutdown`) and the engine core gives its
workers 5 s (`VLLM_WORKER_SHUTDOWN_TIMEOUT_SECONDS`) before each kills the other. Each
spawned process spent seconds of its exit in the interpreter's final collections, so the
worker outlived its grace, the engine core was killed in the middle of its own clean-up,
every rollout stop took the whole 5 s, and what the engine core frees at the end of that
clean-up (its message queue's 160 MiB `psm_*` segment in /dev/shm, a `sem.loky-*`
semaphore) stayed behind until reboot. With this plugin the engine core exits on its own in
about 2 s (docs/benchmarks.md, "Stopping a rollout replica on SIGTERM").

In such a process `meshrl.quick_exit.leave_quickly` runs at exit, after every clean-up of
vLLM's (atexit runs this first-registered handler last). The front end is left alone: the
service runner calls it itself once its own clean-ups ran.

Registered in pyproject.toml under the `vllm.general_plugins` entry-point group, which vLLM
loads once in each of its processes.
"""

from __future__ import annotations

import atexit
import multiprocessing

from meshrl.quick_exit import leave_quickly


def leave_quickly_at_exit() -> None:
    """In a process vLLM spawned, leave quickly at exit; in the front end do nothing."""
    if multiprocessing.parent_process() is not None:
        atexit.register(leave_quickly)
