"""Keep freed memory in the process: glibc malloc tuned for a loop that allocates the same
large tensors step after step (the learner's activations and gradients, the reference's
activations).

Why: by default glibc serves every allocation above its dynamic mmap threshold (128 KiB,
growing to at most 32 MiB) with a fresh mmap, unmaps it on free and trims the heap's top
whenever 128 KiB is free, so each step page-faults (and the kernel zeroes) its activations
and gradients anew, most of all after other processes (vLLM between steps) took the pages.
With these settings a step reuses what the last one freed, and its forward and backward stop
swinging from step to step (docs/benchmarks.md, "meshrl side by side with TRL", has the
figures, alone and in the mesh). The cost: the process keeps its peak heap instead of
returning it.

Transparent huge pages: with the kernel's THP mode `madvise` (this host's), glibc ≥ 2.35 asks
for 2 MiB pages for its mmapped chunks and heap when started with `HUGE_PAGES_ENV`; an
environment variable, read once at start, so the launcher sets it for the learner and the
reference (a container or Kubernetes deployment sets it in the service's environment; the
image does not, as it would reach vLLM too, where its effect is unknown). Fewer, larger pages
mean far fewer page faults per step and a shorter backward (the same section's figures).

`MALLOC_*` variables set by the operator win (glibc reads them at start; we only call
mallopt for the ones not set). Not glibc (musl, macOS): nothing changes, and we say so.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

log = logging.getLogger(__name__)

# mallopt parameter numbers from glibc's malloc.h
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
SETTINGS = {  # env name: (mallopt parameter, value)
    "MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, 32 << 20),  # glibc's maximum: 32 MiB
    "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, 4 << 30),
    "MALLOC_TOP_PAD_": (M_TOP_PAD, 512 << 20),
}


HUGE_PAGES_ENV = {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}


def huge_pages_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """GLIBC_TUNABLES with hugetlb=1 added to the tunables already set (the operator's win)."""
    current = (os.environ if environ is None else environ).get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" in current:
        return {"GLIBC_TUNABLES": current}
    return {"GLIBC_TUNABLES": ":".join(filter(None, [current, HUGE_PAGES_ENV["GLIBC_TUNABLES"]]))}


def keep_freed_memory() -> bool:
    """Apply SETTINGS with mallopt (skipping any the environment sets); True when glibc took them."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        log.info("not glibc: malloc left as it is")
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    ok = all(mallopt(param, value) == 1 for name, (param, value) in SETTINGS.items() if name not in os.environ)
    if not ok:
        log.warning("glibc refused a malloc setting; steps may page-fault their tensors anew")
    return ok
