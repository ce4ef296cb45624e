"""Follow the run's current weights version: watch the KV key the learner writes, load each one.

The learner puts a `WeightsNotice` under one key of the run's KV bucket for every new
version. A replica that (re)starts must hold that version before it takes any work, so
`start()` reads the key once and loads the notice it finds (if none, the base model from
the config is version 0 and the replica is ready at once); `run()` then watches the key
and applies every later notice. `ready` is set while the engine holds the key's current
version — `RolloutWorker` starts consuming prompts only after it is first set. The current
version is usually the newest; it goes back when a learner resumes from an older checkpoint.

What "current" means is the key's newest *revision*, never the highest version number: an
entry with a revision at or below one already taken (a watch replaying its last value after a
reconnect, or the initial value arriving after `start()` read a newer one) is ignored, so a
replica never falls back to weights older than those it holds unless the learner wrote that
older notice last. Notices that arrive while a load is running are not queued one by one:
only the newest is loaded next (a replica that fell behind skips straight to the current
version instead of loading every version in between).

Each notice is checked against the run state first (meshrl.transport.weights.run_version):
only the version the learner has set as the run's current one is loaded. A notice going back
further than the run or skipping ahead of it (a stale replay, a forged put) is refused and
reported (`WeightsLoaded(ok=False)`, naming both versions) and loads nothing: the replica
keeps its weights, and is ready while they are the run's version (after a refusal, the run's
version is the one to hold; its own notice follows). Without a run version (an older
learner) every notice counts, as before.

Simplification: a notice that fails (bad checksum, missing file) leaves the replica on its
old version and not ready until a later notice loads; the failure is reported by
`WeightsUpdater` as `WeightsLoaded(ok=False)`.
"""

from __future__ import annotations

import asyncio
import logging

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.entries import weights_notice_of
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights.run_version import refusal, run_version

log = logging.getLogger(__name__)


class WeightsFollower:
    def __init__(self, state, updater, key: str = WEIGHTS_NOTICE_KEY):
        self.state, self.updater, self.key = state, updater, key
        self.latest_seen = 0
        self.revision = 0  # the newest KV revision taken
        self.ready = asyncio.Event()
        self._pending: pb.WeightsNotice | None = None

    @property
    def held(self) -> int:
        return self.updater.engine.version

    async def start(self) -> None:
        """Load the run's current version, if the learner has published one."""
        entry = await self.state.get(self.key)
        if entry is not None and self.take(entry) and (notice := await self.parsed(entry)) is not None:
            await self.apply(notice)
        self._update_ready()

    async def parsed(self, entry) -> pb.WeightsNotice | None:
        """The entry's notice; None (refused, reported) for bytes that are not one: whatever
        lands under the key (a JetStream API answer someone aimed there) must not stop the replica."""
        notice, problem = weights_notice_of(entry)
        if problem is not None:
            await self.updater.refuse(pb.WeightsNotice(), f"the run KV's {self.key!r} holds {problem}; ignored")
        return notice

    def take(self, entry) -> bool:
        """Whether `entry` is newer than every revision taken so far (and remember it)."""
        revision = int(getattr(entry, "revision", 0) or 0)
        if revision and revision <= self.revision:
            return False
        self.revision = max(self.revision, revision)
        return True

    async def run(self) -> None:
        """Load the key's newest notice whenever it changes, until cancelled."""
        loading: asyncio.Task | None = None
        try:
            async for entry in self.state.watch(self.key):
                if not self.take(entry) or (notice := await self.parsed(entry)) is None:
                    continue
                self._pending = notice  # replaces one not loaded yet
                self.latest_seen = self._pending.version
                self._update_ready()
                if loading is None or loading.done():
                    if loading is not None:
                        loading.result()  # a load that crashed says why
                    loading = asyncio.create_task(self._load_pending(), name="weights-load")
        finally:
            if loading is not None:
                loading.cancel()

    async def _load_pending(self) -> None:
        """Load the newest notice not loaded yet, again until none is left."""
        while self._pending is not None:
            notice, self._pending = self._pending, None
            await self.apply(notice)

    async def apply(self, notice: pb.WeightsNotice) -> None:
        current = await run_version(self.state)
        refused = refusal(notice.version, current)
        if refused:
            await self.updater.refuse(notice, refused)
            self.latest_seen = current  # the version to hold is the run's, not this notice's
            self._update_ready()
            return
        # The key's value, not the highest seen: a resumed learner moves it back.
        self.latest_seen = notice.version
        self._update_ready()  # another version is current: not ready until it is loaded
        await self.updater.apply(notice)
        self._update_ready()

    def _update_ready(self) -> None:
        if self.held == self.latest_seen:
            self.ready.set()
        else:
            self.ready.clear()
