"""Follow the run's current weights version: watch the KV key the learner writes, load each one.

The learner puts a `WeightsNotice` under one key of the run's KV bucket for every new
version. A replica that (re)starts must hold that version before it takes any work, so
`start()` reads the key once and loads the notice it finds (if none, the base model from
the config is version 0 and the replica is ready at once); `run()` then watches the key
and applies every later notice. `ready` is set while the engine holds the key's current
version — `RolloutWorker` starts consuming prompts only after it is first set. The current
version is usually the newest; it goes back when a learner resumes from an older checkpoint.

Simplification: a notice that fails (bad checksum, missing file) leaves the replica on its
old version and not ready until a later notice loads; the failure is reported by
`WeightsUpdater` as `WeightsLoaded(ok=False)`.
"""
from __future__ import annotations

import asyncio
import logging

from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.api.common.v1 import common_pb2 as pb

log = logging.getLogger(__name__)


class WeightsFollower:
    def __init__(self, state, updater, key: str = WEIGHTS_NOTICE_KEY):
        self.state, self.updater, self.key = state, updater, key
        self.latest_seen = 0
        self.ready = asyncio.Event()

    @property
    def held(self) -> int:
        return self.updater.engine.version

    async def start(self) -> None:
        """Load the run's current version, if the learner has published one."""
        entry = await self.state.get(self.key)
        if entry is not None:
            await self.apply(entry.proto(pb.WeightsNotice))
        self._update_ready()

    async def run(self) -> None:
        """Apply every notice written to the key until cancelled (the current one first)."""
        async for entry in self.state.watch(self.key):
            await self.apply(entry.proto(pb.WeightsNotice))

    async def apply(self, notice: pb.WeightsNotice) -> None:
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
