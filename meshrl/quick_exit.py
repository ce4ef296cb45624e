"""Leave a Python process that imported torch and vLLM without its slow, noisy teardown.

The interpreter's final garbage collections walk the whole heap of the imported libraries:
seconds per process on a loaded host (5–11 s for `import vllm.v1.engine.async_llm` alone,
docs/benchmarks.md "Stopping a rollout replica on SIGTERM"), long enough for vLLM to kill its
own engine core mid clean-up and for a container runtime to lose patience. `gc.freeze()`
moves every live object to the permanent generation, so those collections have nothing to
walk; reference counting still frees what it can.

The objects left in cycles are then never collected, and Triton's nanobind bindings report
each one as "leaked" at teardown: some 35 lines per process that read as a fault and are
not. So stderr is closed too. Call this only when every clean-up has run and nothing useful
is left to print.
"""

from __future__ import annotations

import gc
import os
import sys


def leave_quickly() -> None:
    """Freeze the heap and silence the interpreter's teardown that follows."""
    gc.freeze()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
