"""Weights notices the learner did not sign are not loaded, and junk under the notice key does
not stop a replica.

- Against the rollout's WeightsUpdater given the run's verify key: an unsigned notice, one
  signed with another key, and the learner's notice with its location changed afterwards
  are refused and load nothing; the learner's own notice loads.
- On a real nats-server with the run's generated users: a JetStream API answer lands under
  the run KV's notice and run-version keys (the reward can no longer aim one there through a
  reply subject: tests/security/test_bus_attacks.py; written here with the only user that may
  write those keys). A rollout's WeightsFollower refuses it, and loads the learner's next notice.

Run: .venv/bin/python -m pytest tests/security/test_notice_attacks.py -q
"""

from __future__ import annotations

import asyncio
import hashlib

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.security.run_key import create_run_keys, load_verifier, signer_from_env
from meshrl.transport.bus import subjects as names
from meshrl.transport.weights import weights_notice
from meshrl.transport.weights.follow import WeightsFollower
from meshrl.transport.weights.notice import sign_notice
from meshrl.transport.weights.run_version import announce
from meshrl.transport.weights.update import WeightsUpdater
from tests.fixtures.nats import connect_as
from tests.security.fakes import RecordingEngine

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_ambient_credentials")]


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    """(the learner's signer, the replicas' verifier, another run's signer)."""
    ours, theirs = (create_run_keys(tmp_path_factory.mktemp(name)) for name in ("ours", "theirs"))
    return (
        signer_from_env({"MESHRL_RUN_SIGNING_KEY_FILE": str(ours.private)}),
        load_verifier(ours.public),
        signer_from_env({"MESHRL_RUN_SIGNING_KEY_FILE": str(theirs.private)}),
    )


def pushed(tmp_path, version: int, data: bytes = b"weights") -> pb.WeightsNotice:
    """A weights file where the learner writes them (a private dir) and its unsigned notice."""
    folder = tmp_path / f"push{version}"
    folder.mkdir(mode=0o700)
    (folder / "w.safetensors").write_bytes(data)
    return weights_notice(
        run_id="r",
        version=version,
        transport="shm",
        location=str(folder / "w.safetensors"),
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        step=version,
    )


@pytest.mark.parametrize("forgery", ["unsigned", "another_key", "location_changed"])
async def test_a_notice_the_learner_did_not_sign_is_refused(tmp_path, keys, forgery):
    learner, verifier, stranger = keys
    notice = pushed(tmp_path, 1)
    if forgery == "another_key":
        sign_notice(notice, stranger)
    if forgery == "location_changed":
        sign_notice(notice, learner)
        notice.location = str(pushed(tmp_path, 2, b"forged!").location)
        notice.sha256, notice.size_bytes = hashlib.sha256(b"forged!").hexdigest(), 7
    engine = RecordingEngine()
    report = await WeightsUpdater(engine, run_id="r", replica_id="r0", verifier=verifier).apply(notice)
    assert not report.ok and engine.loaded == [] and "only the run's learner signs weights notices" in report.error
    good = sign_notice(pushed(tmp_path, 3), learner)
    assert (await WeightsUpdater(engine, run_id="r", replica_id="r0", verifier=verifier).apply(good)).ok
    assert engine.loaded == [b"weights"]


async def test_junk_under_the_notice_key_does_not_stop_a_replica(tmp_path, secured, keys):
    learner_key, verifier, _ = keys
    learner, rollout, reward = [await connect_as(secured, user) for user in ("learner", "rollout", "reward")]
    try:
        await learner.ensure_streams()
        engine, reports = RecordingEngine(), []

        async def report(loaded):
            reports.append(loaded)

        follower = WeightsFollower(
            rollout.state, WeightsUpdater(engine, run_id="r", replica_id="r0", publish_loaded=report, verifier=verifier)
        )
        await follower.start()
        watching = asyncio.create_task(follower.run())
        await announce(learner.state, sign_notice(pushed(tmp_path, 1, b"v1"), learner_key))
        await until(lambda: engine.version == 1)
        answer = await learner.nc.request("$JS.API.INFO", b"", timeout=5)  # what used to land there
        for key in (names.WEIGHTS_NOTICE_KEY, names.RUN_VERSION_KEY):
            await learner.state.put(key, answer.data)
        await until(lambda: any("not a WeightsNotice" in r.error for r in reports))
        await announce(learner.state, sign_notice(pushed(tmp_path, 2, b"v2"), learner_key))
        await until(lambda: engine.version == 2)
        assert engine.loaded == [b"v1", b"v2"] and not watching.done()
        watching.cancel()
    finally:
        for bus in (learner, rollout, reward):
            await bus.close()


async def until(condition, timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "not reached in time"
        await asyncio.sleep(0.05)
