"""Alerts handed to an async publisher (the learner's bus: `async publish(alert_dict)`).

`AlertEngine.observe` is synchronous, so the publish runs as a task on the running event
loop (or, from another thread, on the `loop` given here). Publishing never blocks the
trainer and a failed publish is logged, not raised. `await sink.drain()` waits for the
publishes in flight (call it before the process exits).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from meshrl.alerts.types import Alert

log = logging.getLogger("meshrl.alerts")


class NatsSink:
    def __init__(
        self, publish: Callable[[dict[str, Any]], Awaitable[Any]], loop: asyncio.AbstractEventLoop | None = None
    ):
        self.publish, self.loop = publish, loop
        self._pending: set = set()

    def _done(self, future) -> None:
        self._pending.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("alerts: publishing an alert to NATS failed: %r", future.exception())

    def __call__(self, alert: Alert) -> None:
        coro = self.publish(alert.to_dict())
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and self.loop in (None, running):
            future = running.create_task(coro)
        elif self.loop is not None:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        else:
            coro.close()  # never started: close it so Python does not warn "never awaited"
            raise RuntimeError("NatsSink needs a running event loop or the loop= to publish on")
        self._pending.add(future)
        future.add_done_callback(self._done)

    async def drain(self) -> None:
        tasks = [f if isinstance(f, asyncio.Future) else asyncio.wrap_future(f) for f in list(self._pending)]
        await asyncio.gather(*tasks, return_exceptions=True)
