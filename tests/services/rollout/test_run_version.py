"""A rollout replica loads only the run's current weights version (run KV `run_version`,
meshrl.transport.weights.run_version), on a real nats-server: the learner's `announce` is
followed forward and back (a resume from an older checkpoint); a stale notice replayed or a
forged one skipping ahead is refused, reported naming both versions, and changes nothing.
The engine is a FAKE that records the version it is given (no vLLM); the KV, its watch, the
updater's file checks and the WeightsLoaded reports are real.

    .venv/bin/python -m pytest -q tests/services/rollout/test_run_version.py
"""

import asyncio
import hashlib
from types import SimpleNamespace

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import subjects as names
from meshrl.transport.weights.follow import WeightsFollower
from meshrl.transport.weights.run_version import announce
from meshrl.transport.weights.update import WeightsUpdater

pytestmark = pytest.mark.timeout(60)


class FakeEngine:
    """A FAKE engine: 'loads' a file by taking its version."""

    def __init__(self):
        self.version = 0

    async def load_weights(self, path, version: int) -> float:
        self.version = version
        return 0.0


@pytest.fixture
def notice(tmp_path, run_id):
    """notice(v): a shm notice for a real file of version v (its bytes and checksum)."""

    def make(version: int) -> pb.WeightsNotice:
        path = tmp_path / f"weights-v{version}.safetensors"
        path.write_bytes(f"weights of v{version}".encode())
        data = path.read_bytes()
        return pb.WeightsNotice(
            run_id=run_id,
            version=version,
            transport="shm",
            location=str(path),
            sha256=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
            format="safetensors",
            step=max(version - 1, 0),
        )

    return make


@pytest.fixture
async def replica(bus, run_id):
    """A replica following the run KV: `.engine`, `.follower`, `.report()` (its next WeightsLoaded)."""
    subject = names.weights_loaded_subject(run_id)
    reports = await bus.nc.subscribe(subject)
    engine = FakeEngine()
    updater = WeightsUpdater(
        engine, run_id=run_id, replica_id="rollout-t", publish_loaded=lambda report: bus.publish_event(subject, report)
    )
    follower = WeightsFollower(bus.state, updater)
    await follower.start()
    watch = asyncio.create_task(follower.run())

    async def report() -> pb.WeightsLoaded:
        return pb.WeightsLoaded.FromString((await reports.next_msg(timeout=10)).data)

    yield SimpleNamespace(engine=engine, follower=follower, report=report)
    watch.cancel()
    await asyncio.gather(watch, return_exceptions=True)
    await reports.unsubscribe()


async def ready(replica) -> bool:
    """The replica is (or becomes, once the report is out) ready: holds the run's version."""
    await asyncio.wait_for(replica.follower.ready.wait(), 5)
    return True


async def loads(replica, bus, notice_v) -> pb.WeightsLoaded:
    """The learner announces `notice_v`; the replica's report on it."""
    await announce(bus.state, notice_v)
    return await replica.report()


async def test_the_learners_next_version_is_loaded_and_its_run_version_is_put_first(replica, bus, notice):
    for version in (1, 2):
        report = await loads(replica, bus, notice(version))
        assert (report.version, report.ok, report.error) == (version, True, "")
    assert replica.engine.version == 2 and await ready(replica)
    run_version = await bus.state.get(names.RUN_VERSION_KEY)
    notice_entry = await bus.state.get(names.WEIGHTS_NOTICE_KEY)
    assert run_version.json() == {"version": 2, "step": 1}
    assert run_version.revision < notice_entry.revision  # a replica that sees notice v finds the run at v


async def test_a_learner_resuming_from_an_older_checkpoint_takes_the_replica_back(replica, bus, notice):
    for version in (1, 2, 3):
        assert (await loads(replica, bus, notice(version))).ok
    report = await loads(replica, bus, notice(2))  # resumed from step 2's checkpoint: v2 again
    assert (report.version, report.ok) == (2, True)
    assert replica.engine.version == 2 and await ready(replica)


async def test_a_stale_notice_replayed_is_refused_naming_both_versions(replica, bus, notice):
    for version in (1, 2):
        assert (await loads(replica, bus, notice(version))).ok
    await bus.state.put(names.WEIGHTS_NOTICE_KEY, notice(1))  # v1's notice again; the run is at v2
    report = await replica.report()
    assert (report.version, report.ok) == (1, False)
    assert "weights v1 goes back from the run's current version v2" in report.error
    assert replica.engine.version == 2 and await ready(replica)  # serving v2 as before


async def test_a_notice_skipping_ahead_of_the_run_is_refused(replica, bus, notice):
    assert (await loads(replica, bus, notice(1))).ok
    await bus.state.put(names.WEIGHTS_NOTICE_KEY, notice(999))  # forged: the learner is at v1
    report = await replica.report()
    assert (report.version, report.ok) == (999, False)
    assert "weights v999 skips ahead of the run's current version v1" in report.error
    assert replica.engine.version == 1 and await ready(replica)
    assert (await loads(replica, bus, notice(2))).ok  # the learner's next version still loads


async def test_without_a_run_version_every_notice_is_loaded_as_before(replica, bus, notice):
    """A learner from before `run_version` puts only the notice."""
    for version in (3, 1):
        await bus.state.put(names.WEIGHTS_NOTICE_KEY, notice(version))
        assert (await replica.report()).ok
    assert replica.engine.version == 1


async def test_a_replica_starting_between_the_learners_two_puts_waits_for_the_runs_notice(bus, run_id, notice):
    """The run is at v2, its notice still says v1 (the learner put one, not yet the other):
    a starting replica refuses v1 and is not ready on the base weights."""
    await announce(bus.state, notice(1))
    await bus.state.put(names.RUN_VERSION_KEY, {"version": 2, "step": 1})
    engine, refused = FakeEngine(), []

    async def publish(report):
        refused.append(report)

    updater = WeightsUpdater(engine, run_id=run_id, replica_id="r", publish_loaded=publish)
    follower = WeightsFollower(bus.state, updater)
    await follower.start()
    assert [(r.version, r.ok) for r in refused] == [(1, False)] and "v1 goes back from" in refused[0].error
    assert engine.version == 0 and not follower.ready.is_set()
    await bus.state.put(names.WEIGHTS_NOTICE_KEY, notice(2))
    watch = asyncio.create_task(follower.run())
    try:
        await asyncio.wait_for(follower.ready.wait(), 5)
    finally:
        watch.cancel()
    assert engine.version == 2
