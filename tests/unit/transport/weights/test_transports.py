"""The sending side of meshrl.transport.weights and the receiver's way to the bytes, without
NATS: shm writes into a new private directory, keeps the last KEEP_VERSIONS files and renames
into place; an object-store notice is fetched into a new private directory under the cache dir
(removed afterwards; a failed fetch leaves nothing); the notice names a known transport.

Run: .venv/bin/python -m pytest tests/unit/transport/weights -q
"""

import asyncio
import hashlib
import os
import stat
from types import SimpleNamespace

import pytest

from meshrl.transport.private_paths import UnsafePath
from meshrl.transport.weights import (
    KEEP_VERSIONS,
    TRANSPORTS,
    ObjectStoreTransport,
    ShmTransport,
    check_notice,
    local_file,
    transport_for,
    weights_notice,
)


def test_the_transports_are_the_ones_a_notice_may_name():
    assert {ShmTransport.name, ObjectStoreTransport.name} <= set(TRANSPORTS)
    assert isinstance(transport_for("shm", None, "r"), ShmTransport)
    assert isinstance(transport_for("objectstore", SimpleNamespace(run_id="r"), "r"), ObjectStoreTransport)


def test_shm_renames_into_place_and_keeps_the_last_versions(tmp_path):
    transport = ShmTransport("r", root=str(tmp_path))
    assert transport.dir is None  # nothing made before the first push
    for version in range(1, 5):
        staged = transport.staging_path(version)
        staged.write_bytes(b"w%d" % version)
        assert asyncio.run(transport.put(version, staged)) == str(transport.dir / f"weights-v{version}.safetensors")
    assert sorted(p.name for p in transport.dir.iterdir()) == [
        f"weights-v{v}.safetensors" for v in range(5 - KEEP_VERSIONS, 5)
    ]
    assert transport.dir.parent == tmp_path and transport.dir.name.startswith("meshrl-r-")
    assert stat.S_IMODE(transport.dir.stat().st_mode) == 0o700
    transport.close()
    assert not transport.dir.exists()


def test_a_notice_for_a_shm_file_is_read_where_it_lies(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"abc")
    notice = weights_notice(
        run_id="r",
        version=2,
        transport="shm",
        location=str(path),
        sha256=hashlib.sha256(b"abc").hexdigest(),
        size_bytes=3,
        step=1,
    )
    check_notice(notice, "r")

    async def where():
        async with local_file(notice, run_id="r", reader="a", cache_dir=tmp_path, fetch_object=None) as got:
            return got

    assert asyncio.run(where()) == (path, None)


def test_a_shm_dir_opened_up_after_it_was_made_is_refused(tmp_path):
    transport = ShmTransport("r", root=str(tmp_path))
    transport.staging_path(1)
    os.chmod(transport.dir, 0o777)
    with pytest.raises(UnsafePath, match="not private"):
        transport.staging_path(2)


def test_an_object_store_notice_is_fetched_and_a_failed_fetch_leaves_nothing(tmp_path):
    notice = weights_notice(
        run_id="r", version=3, transport="objectstore", location="weights-v3", sha256="a" * 64, size_bytes=3, step=2
    )

    async def fetch(name, dest):
        dest.write_bytes(b"abc")
        return "a" * 64

    async def broken(name, dest):
        dest.write_bytes(b"ab")
        raise ConnectionError("gone")

    async def fetched(fetch_object):
        async with local_file(notice, run_id="r", reader="a", cache_dir=tmp_path, fetch_object=fetch_object) as got:
            path, verified = got
            return path.parent, stat.S_IMODE(path.parent.stat().st_mode), path.read_bytes(), verified

    parent, mode, data, verified = asyncio.run(fetched(fetch))
    assert (parent.parent, parent.name[:9], mode, data, verified) == (tmp_path, "meshrl-r-", 0o700, b"abc", "a" * 64)
    assert list(tmp_path.iterdir()) == []  # removed once used
    with pytest.raises(ConnectionError):
        asyncio.run(fetched(broken))
    assert list(tmp_path.iterdir()) == []
