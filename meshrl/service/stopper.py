"""Stopper: what SIGTERM and SIGINT do to a service process.

While the service still starts up (a model load, a 5 s health check, vLLM's start), a
signal cancels at once: nothing is in hand yet, and the clean-ups registered so far run.
Once its work runs, the first signal sets `requested`: the runner then cancels the work
(in-flight messages are nak'ed so another replica takes them) or, for the learner, lets it
finish its step and checkpoint. A second signal cancels at once. A cancelled service exits 0.
"""

from __future__ import annotations

import asyncio
import logging
import signal

log = logging.getLogger(__name__)


class Stopper:
    def __init__(self) -> None:
        self.requested = asyncio.Event()
        self.reason = "stop requested"
        self.working = False  # set by the runner while the service's work runs
        self.task: asyncio.Task | None = None

    def install(self, task: asyncio.Task) -> None:
        """Handle SIGTERM and SIGINT in the running loop; `task` is what a hard stop cancels."""
        self.task = task
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.on_signal, sig.name)

    def on_signal(self, signame: str) -> None:
        if self.working and not self.requested.is_set():
            log.warning("%s: stopping (send it again to stop at once)", signame)
            self.request(signame)
            return
        log.warning("%s: stopping now", signame)
        if self.task is not None:
            self.task.cancel()

    def request(self, reason: str = "stop requested") -> None:
        """Ask the running service to stop (what the first signal does; tests call it)."""
        self.reason = reason
        self.requested.set()
