"""Attacks on the weights files in /dev/shm, by a second local user (`meshrl-attacker`).

/dev/shm is writable by everyone and the run id is on every command line, so another user
can create the names a run would use before it does. Each test performs one such attack on
the real publisher (ShmTransport, the learner's) and the real receiver (WeightsUpdater,
the rollout's, with the real object store on a real nats-server):
- the learner's weights directory made first by the attacker (then theirs to swap files in),
  with a link at the staging name that would make the learner overwrite a file of root's;
- a notice that points into a directory or at a link the attacker controls;
- the file swapped between the rollout's sha256 check and the engine's load;
- the object-store fetch's predictable destination made a link to a file of root's.

Run: .venv/bin/python -m pytest tests/security/test_shm_weights.py -q
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import uuid
from pathlib import Path

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import subjects as names
from meshrl.transport.weights import transport_for, weights_notice
from meshrl.transport.weights.update import WeightsUpdater
from tests.security.fakes import RecordingEngine

LEARNER_BYTES = b"the learner's weights " * 1000
FORGED_BYTES = b"the attacker's weights" * 1000


def notice_for(location: str, data: bytes, run_id: str, transport: str = "shm") -> pb.WeightsNotice:
    return weights_notice(
        run_id=run_id,
        version=1,
        transport=transport,
        location=location,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        step=1,
    )


async def publish_shm(run_id: str) -> str:
    """What the learner does for one version over shm; returns the notice's location."""
    transport = transport_for("shm", None, run_id)
    staged = transport.staging_path(1)
    staged.write_bytes(LEARNER_BYTES)
    return await transport.put(1, staged)


@pytest.fixture
def run_id():
    return f"sec{uuid.uuid4().hex[:10]}"


@pytest.fixture
def victim(tmp_path) -> Path:
    """A file of root's that the attacker wants overwritten (they need not be able to read it)."""
    path = tmp_path / "victim"
    path.write_bytes(b"root's own data")
    return path


@pytest.fixture(autouse=True)
def free_shm(run_id):
    yield
    for path in Path("/dev/shm").glob(f"{names.shm_prefix(run_id)}*"):
        os.system(f"rm -rf '{path}'")


def test_the_learner_never_writes_into_a_directory_another_user_made(local_attacker, run_id, victim):
    predictable = Path("/dev/shm") / names.shm_prefix(run_id)
    local_attacker.run(["mkdir", "-m", "0777", str(predictable)])
    local_attacker.run(["ln", "-s", str(victim), str(predictable / "weights-v1.tmp")])

    location = Path(asyncio.run(publish_shm(run_id)))

    assert victim.read_bytes() == b"root's own data"  # the link was not followed
    assert location.parent != predictable and location.read_bytes() == LEARNER_BYTES
    st = location.parent.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (os.geteuid(), 0o700)
    swap = local_attacker.run(["cp", "/etc/hostname", str(location)], check=False)
    assert swap.returncode != 0 and "Permission denied" in swap.stderr
    assert location.read_bytes() == LEARNER_BYTES


@pytest.mark.parametrize("trap", ["foreign_dir", "link"])
def test_a_notice_into_a_place_another_user_controls_is_refused(local_attacker, run_id, trap):
    evil = Path("/dev/shm") / f"{names.shm_prefix(run_id)}-evil"
    local_attacker.run(["mkdir", "-m", "0777", str(evil)])
    local_attacker.python(f"open({str(evil / 'w.safetensors')!r}, 'wb').write({FORGED_BYTES!r})")
    location = str(evil / "w.safetensors")
    if trap == "link":  # a link in the learner's own private directory, to the attacker's file
        real = Path(asyncio.run(publish_shm(run_id)))
        os.replace(real, real.with_suffix(".bak"))
        os.symlink(location, real)
        location = str(real)
    engine = RecordingEngine()
    report = asyncio.run(
        WeightsUpdater(engine, run_id=run_id, replica_id="r0").apply(notice_for(location, FORGED_BYTES, run_id))
    )
    assert not report.ok and engine.loaded == [] and engine.version == 0
    expected = "not private to uid 0" if trap == "foreign_dir" else "without following links"
    assert expected in report.error, report.error


def test_a_file_swapped_after_the_check_is_not_the_one_loaded(run_id):
    location = asyncio.run(publish_shm(run_id))

    def swap():  # whoever can write there renames other bytes over the checked name
        forged = Path(location).with_name("forged")
        forged.write_bytes(FORGED_BYTES)
        os.replace(forged, location)

    engine = RecordingEngine(before_read=swap)
    report = asyncio.run(
        WeightsUpdater(engine, run_id=run_id, replica_id="r0").apply(notice_for(location, LEARNER_BYTES, run_id))
    )
    assert report.ok, report.error
    assert engine.loaded == [LEARNER_BYTES]  # the checked bytes, not the name's new ones


async def test_the_object_store_fetch_never_follows_a_planted_link(local_attacker, bus, run_id, victim, tmp_path):
    await bus.weights.put_bytes("weights-v1", LEARNER_BYTES)
    # where main fetched to: a predictable name in /dev/shm (".partial" while in flight)
    predictable = Path("/dev/shm") / f"{names.shm_prefix(run_id)}-r0-v1.safetensors"
    for name in (predictable, predictable.with_name(predictable.name + ".partial")):
        local_attacker.run(["ln", "-s", str(victim), str(name)])
    engine = RecordingEngine()
    updater = WeightsUpdater(engine, run_id=run_id, replica_id="r0", fetch_object=bus.weights.fetch_verified)
    report = await updater.apply(notice_for("weights-v1", LEARNER_BYTES, run_id, transport="objectstore"))
    assert report.ok, report.error
    assert engine.loaded == [LEARNER_BYTES] and victim.read_bytes() == b"root's own data"
    assert sorted(p.name for p in Path("/dev/shm").glob(f"{names.shm_prefix(run_id)}*")) == sorted(
        [predictable.name, predictable.name + ".partial"]
    )  # the fetch's own dir is gone
