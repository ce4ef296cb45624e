"""Check: one doctor result (pass / fail / skip / warn) with what was found and, for a failure, the fix."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import dataclass
from typing import Callable

PASS, FAIL, SKIP, WARN = "pass", "fail", "skip", "warn"


@dataclass
class Check:
    name: str
    status: str  # PASS | FAIL | SKIP | WARN (runs, but probably not as meant: `fix` says why)
    detail: str = ""
    fix: str = ""  # what to do; set on every failure
    seconds: float = 0.0
    config: bool = False  # decided by the config alone (a failure is a refused config: exit 2)

    @property
    def ok(self) -> bool:
        return self.status != FAIL


def passed(name: str, detail: str, *, config: bool = False) -> Check:
    return Check(name, PASS, detail, config=config)


def failed(name: str, detail: str, fix: str, *, config: bool = False) -> Check:
    return Check(name, FAIL, detail, fix, config=config)


def warned(name: str, detail: str, fix: str) -> Check:
    return Check(name, WARN, detail, fix)


def skipped(name: str, reason: str, *, config: bool = False) -> Check:
    return Check(name, SKIP, reason, config=config)


def run_check(name: str, fn: Callable[..., "Check | list[Check]"], *args) -> list[Check]:
    """Run one check (some give one result per item); an unexpected exception becomes a
    failure naming it, never a crash. Each result gets the wall time of the whole check."""
    start = time.monotonic()
    try:
        result = fn(*args)
    except Exception as err:  # noqa: BLE001 - a doctor reports, it does not crash
        result = failed(
            name,
            f"the check itself raised {type(err).__name__}: {err}",
            "fix the environment problem named above; if it looks like a meshrl bug, report it",
        )
    results = result if isinstance(result, list) else [result]
    for r in results:
        r.seconds = time.monotonic() - start
    return results


def run_async(coro):
    """asyncio.run, also from code already inside an event loop (runs it on a helper thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
