"""Which weights notices a rollout replica loads (WeightsFollower), with a FAKE KV and updater:
the key's newest revision, never an older revision replayed, only the newest of a burst."""

import asyncio
from types import SimpleNamespace

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.kv import Entry
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights.follow import WeightsFollower


def entry(version: int, revision: int) -> Entry:
    return Entry(WEIGHTS_NOTICE_KEY, pb.WeightsNotice(version=version).SerializeToString(), revision)


class FakeUpdater:
    """A FAKE updater: 'loads' a version by waiting for `gate` (when given), then holding it."""

    def __init__(self, gate: asyncio.Event | None = None):
        self.engine = SimpleNamespace(version=0)
        self.loaded, self.gate = [], gate

    async def apply(self, notice):
        if notice.version == self.engine.version:
            return
        if self.gate is not None:
            await self.gate.wait()
        self.loaded.append(notice.version)
        self.engine.version = notice.version


class FakeKV:
    """A FAKE run KV: get() returns `current`; watch() yields what the test puts in `feed`."""

    def __init__(self, current=None):
        self.current, self.feed = current, asyncio.Queue()

    async def get(self, key):
        return self.current if key == WEIGHTS_NOTICE_KEY else None  # no run version: an older learner

    async def watch(self, key):
        while True:
            yield await self.feed.get()


async def follow(kv, updater, *entries):
    """Start the follower, feed `entries` to its watch, let it settle, stop it."""
    follower = WeightsFollower(kv, updater)
    await follower.start()
    running = asyncio.create_task(follower.run())
    for e in entries:
        kv.feed.put_nowait(e)
    for _ in range(50):
        await asyncio.sleep(0)
    return follower, running


async def test_an_older_revision_replayed_by_the_watch_is_ignored():
    updater = FakeUpdater()
    kv = FakeKV(current=entry(4, revision=7))
    follower, running = await follow(kv, updater, entry(3, revision=6), entry(4, revision=7))
    running.cancel()
    assert updater.loaded == [4] and follower.held == 4 and follower.ready.is_set()


async def test_the_learner_moving_the_key_back_is_followed():
    updater = FakeUpdater()
    kv = FakeKV(current=entry(4, revision=4))
    follower, running = await follow(kv, updater, entry(4, revision=4), entry(3, revision=5))
    running.cancel()
    assert updater.loaded == [4, 3] and follower.held == 3 and follower.ready.is_set()


async def test_a_burst_of_notices_during_a_load_loads_only_the_newest_next():
    gate = asyncio.Event()
    updater = FakeUpdater(gate)
    kv = FakeKV()
    follower, running = await follow(kv, updater, entry(1, revision=1))  # v1 starts loading
    for v in (2, 3, 4):
        kv.feed.put_nowait(entry(v, revision=v))
    for _ in range(50):
        await asyncio.sleep(0)
    assert not follower.ready.is_set() and follower.latest_seen == 4  # v1 loading, v4 current
    gate.set()
    for _ in range(50):
        await asyncio.sleep(0)
    running.cancel()
    assert updater.loaded == [1, 4] and follower.held == 4 and follower.ready.is_set()
