"""Wait until a run exists on NATS: its run KV bucket, created by the learner.

A service started before the learner (compose and Kubernetes start them all at once) would
otherwise fail its first KV write with "no response from stream" and crash-loop until the
learner caught up. It waits instead, saying what for, up to `nats.run_wait_s`:

    await wait_for_run(js, run_id, timeout_s=600, on_wait=log.info)
"""

import asyncio
import time
from typing import Callable

from nats.js.errors import NotFoundError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.errors import BusError

SAY_EVERY_S = 30.0


class RunNotFound(BusError):
    pass


async def run_exists(js, run_id: str) -> bool:
    try:
        await js.stream_info(f"KV_{names.kv_bucket(run_id)}")
    except NotFoundError:
        return False
    return True


async def wait_for_run(
    js, run_id: str, *, timeout_s: float, on_wait: Callable[[str], None], poll_s: float = 0.5
) -> None:
    start = last_said = time.monotonic()
    while not await run_exists(js, run_id):
        waited = time.monotonic() - start
        if waited >= timeout_s:
            raise RunNotFound(
                f"run {run_id!r} has no streams on NATS after {timeout_s:g} s: is its "
                f"learner running with --run-id {run_id} against the same NATS? "
                f"(nats.run_wait_s sets how long services wait)"
            )
        if waited == 0 or time.monotonic() - last_said >= SAY_EVERY_S:
            on_wait(
                f"waiting for run {run_id!r} to exist on NATS (its learner creates the streams); "
                f"{waited:.0f} s of {timeout_s:g} s"
            )
            last_said = time.monotonic()
        await asyncio.sleep(poll_s)
