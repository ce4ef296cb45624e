"""A process pool that runs a picklable function per item with a per-item deadline.

Why a process pool: math-verify (sympy underneath) can hang on pathological input (e.g.
`9^{9^{9^{9}}}`), and its own timeouts use SIGALRM, which only works in a main thread.
We call it with those off, in `spawn`ed worker processes, and enforce our own deadline.

How the deadline is per item: at most `workers` items are in flight, so an item starts
when it is submitted (workers are warmed up before the first item). An item past its
deadline is reported TIMEOUT; since a stuck worker cannot be interrupted, the pool is
killed and restarted, and the other in-flight items are requeued (not charged). An item
in flight when a worker crashes is requeued once; crashing again makes it ERROR.
"""

import collections
import concurrent.futures as cf
import multiprocessing
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures.process import BrokenProcessPool

from meshrl.services.reward.types import ItemScore, Status, failed
from meshrl.services.reward.verify_worker import warm_up

WARMUP_TIMEOUT_S = 60.0


class VerifyPool:
    def __init__(self, workers: int = 2, warm_module: str = "math_verify"):
        self.workers = workers
        self.warm_module = warm_module
        self.lock = threading.Lock()  # one batch at a time; callers come from threads
        self.pool: cf.ProcessPoolExecutor | None = None
        self.restarts = 0

    def start(self) -> None:
        if self.pool is not None:
            return
        self.pool = cf.ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        warm = [self.pool.submit(warm_up, self.warm_module) for _ in range(self.workers)]
        cf.wait(warm, timeout=WARMUP_TIMEOUT_S)

    def kill(self) -> None:
        """Stop the pool now, killing workers that may be stuck in C or sympy code."""
        if self.pool is None:
            return
        for proc in list(getattr(self.pool, "_processes", {}).values()):
            proc.kill()  # no public API kills a busy worker; shutdown() would wait for it
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()

    def run(self, fn: Callable, args: Sequence[tuple], timeout_s: float) -> list[ItemScore | object]:
        """fn(*args[i]) for each i; a result, or ItemScore TIMEOUT/ERROR for failed items."""
        with self.lock:
            self.start()
            return Batch(self, fn, args, timeout_s).run()


class Batch:
    """One `VerifyPool.run` call: the scheduling loop."""

    def __init__(self, pool: VerifyPool, fn: Callable, args: Sequence[tuple], timeout_s: float):
        self.pool, self.fn, self.args, self.timeout_s = pool, fn, args, timeout_s
        self.results: list = [None] * len(args)
        self.pending = collections.deque(range(len(args)))
        self.inflight: dict[cf.Future, tuple[int, float]] = {}
        self.crashes = collections.Counter()

    def run(self) -> list:
        while self.pending or self.inflight:
            self.fill()
            done, _ = cf.wait(self.inflight, timeout=self.next_deadline(), return_when=cf.FIRST_COMPLETED)
            if self.collect(done):
                continue  # the pool broke: restarted, in-flight items requeued
            self.expire()
        return self.results

    def fill(self) -> None:
        while self.pending and len(self.inflight) < self.pool.workers:
            i = self.pending.popleft()
            self.inflight[self.pool.pool.submit(self.fn, *self.args[i])] = (i, time.monotonic())

    def next_deadline(self) -> float:
        soonest = min(started for _, started in self.inflight.values()) + self.timeout_s
        return max(0.0, soonest - time.monotonic())

    def collect(self, done: set[cf.Future]) -> bool:
        """Store finished results; on a broken pool restart it and return True."""
        for fut in done:
            i, _ = self.inflight.pop(fut)
            try:
                self.results[i] = fut.result()
            except BrokenProcessPool:
                self.inflight[fut] = (i, 0.0)
                self.on_crash()
                return True
            except Exception as err:  # the function raised: this item's own error
                self.results[i] = failed(Status.ERROR, f"{type(err).__name__}: {err}")
        return False

    def on_crash(self) -> None:
        for i, _ in self.inflight.values():
            self.crashes[i] += 1
            if self.crashes[i] >= 2:
                self.results[i] = failed(Status.ERROR, "verifier process crashed on this item (twice)")
            else:
                self.pending.appendleft(i)
        self.inflight.clear()
        self.pool.restart()

    def expire(self) -> None:
        now = time.monotonic()
        expired = [i for i, started in self.inflight.values() if now - started >= self.timeout_s]
        if not expired:
            return
        for i in expired:
            self.results[i] = failed(Status.TIMEOUT, f"no result within {self.timeout_s:g}s (verifier killed)")
        self.pending.extendleft(i for i, _ in self.inflight.values() if i not in expired)
        self.inflight.clear()
        self.pool.restart()


_POOLS: dict[int, VerifyPool] = {}
_POOLS_LOCK = threading.Lock()


def shared_pool(workers: int) -> VerifyPool:
    """One pool per worker count per process (rules share it across batches)."""
    with _POOLS_LOCK:
        if workers not in _POOLS:
            _POOLS[workers] = VerifyPool(workers)
        return _POOLS[workers]


def shutdown_pools() -> None:
    with _POOLS_LOCK:
        for pool in _POOLS.values():
            pool.kill()
        _POOLS.clear()
