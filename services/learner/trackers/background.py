"""`BackgroundSender`: a tracker's network calls on their own thread, so a slow or dead
tracking server never holds up a training step.

Jobs are sent in order. A job that fails stays at the head of the queue and is retried every
`retry_every_s` (one warning per outage, one line when the server is back); meanwhile new jobs
wait behind it, at most `max_pending` (the oldest then leave the queue for `unsent_path`, so a
long outage costs memory no more than rows). `close()` gives the queue one last chance within `timeout_s`, then
writes what is still unsent to `unsent_path` as JSON lines and says so.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

log = logging.getLogger("meshrl.learner.trackers")


@dataclass
class Job:
    kind: str  # what `send` does with it: "metrics", "samples", "tag", "end", ...
    payload: dict


class BackgroundSender:
    def __init__(
        self, send: Callable[[Job], None], *, name: str, retry_every_s: float, max_pending: int, unsent_path: Path
    ):
        self.send, self.name = send, name
        self.retry_every_s, self.max_pending, self.unsent_path = retry_every_s, max_pending, unsent_path
        self.jobs: deque[Job] = deque()
        self.wakeup = threading.Condition()
        self.closing = False
        self.down_since: float | None = None
        self.dropped = 0
        self.thread = threading.Thread(target=self._run, name=f"tracker-{name}", daemon=True)
        self.thread.start()

    def submit(self, job: Job) -> None:
        with self.wakeup:
            self.jobs.append(job)
            if len(self.jobs) > self.max_pending:
                self._append_unsent([self.jobs.popleft()])
                self.dropped += 1
                if self.dropped == 1:
                    log.warning(
                        "%s: more than %d rows waiting; the oldest go to %s, sent when the server is back",
                        self.name,
                        self.max_pending,
                        self.unsent_path,
                    )
            self.wakeup.notify()

    def _run(self) -> None:
        while True:
            with self.wakeup:
                while not self.jobs and not self.closing:
                    self.wakeup.wait()
                if not self.jobs:
                    return
                job = self.jobs[0]
            if self._try(job):
                with self.wakeup:
                    if self.jobs and self.jobs[0] is job:
                        self.jobs.popleft()
            elif not self._wait_to_retry():
                return

    def _try(self, job: Job) -> bool:
        try:
            self.send(job)
        except Exception as err:  # any failure of the tracker's client: keep the job, go on training
            if self.down_since is None:
                self.down_since = time.monotonic()
                log.warning(
                    "%s unreachable (%s: %s): the run goes on; rows wait in memory and are "
                    "retried every %.0f s (metrics.jsonl keeps every step)",
                    self.name,
                    type(err).__name__,
                    str(err)[:200],
                    self.retry_every_s,
                )
            return False
        if self.down_since is not None:
            log.warning(
                "%s is back after %.0f s: sending %d waiting rows",
                self.name,
                time.monotonic() - self.down_since,
                len(self.jobs),
            )
            self.down_since = None
        return True

    def _wait_to_retry(self) -> bool:
        """Sleep until the next retry; False when closing (close() takes over from here)."""
        with self.wakeup:
            if not self.closing:
                self.wakeup.wait(self.retry_every_s)
            return not self.closing

    def close(self, timeout_s: float) -> int:
        """Send what is queued (one try each while the server answers), within `timeout_s`;
        returns how many jobs are left unsent (written to `unsent_path`)."""
        with self.wakeup:
            self.closing = True
            self.wakeup.notify()
        self.thread.join(timeout_s)
        deadline = time.monotonic() + timeout_s
        while self.jobs and not self.thread.is_alive() and time.monotonic() < deadline and self._try(self.jobs[0]):
            self.jobs.popleft()
        return self._save_unsent()

    def _save_unsent(self) -> int:
        with self.wakeup:
            left = list(self.jobs)
        if left:
            self._append_unsent(left)
            log.warning("%s: %d rows could not be sent; kept in %s", self.name, len(left), self.unsent_path)
        return len(left)

    def _append_unsent(self, jobs: list[Job]) -> None:
        self.unsent_path.parent.mkdir(parents=True, exist_ok=True)
        with self.unsent_path.open("a", encoding="utf-8") as f:
            f.writelines(json.dumps(asdict(job)) + "\n" for job in jobs)
