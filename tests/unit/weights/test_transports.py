"""The sending side of meshrl.transport.weights and the receiver's way to the bytes, without
NATS: shm keeps the last KEEP_VERSIONS files and renames into place; an object-store notice is
fetched to the cache dir (a failed fetch leaves nothing); the notice names a known transport.

Run: .venv/bin/python -m pytest tests/unit/weights -q
"""
import asyncio
import hashlib
from types import SimpleNamespace

import pytest

from meshrl.transport.weights import (KEEP_VERSIONS, TRANSPORTS, ObjectStoreTransport, ShmTransport, check_notice,
                                      local_file, transport_for, weights_notice)


def test_the_transports_are_the_ones_a_notice_may_name():
    assert {ShmTransport.name, ObjectStoreTransport.name} <= set(TRANSPORTS)
    assert isinstance(transport_for("shm", None, "r"), ShmTransport)
    assert isinstance(transport_for("objectstore", SimpleNamespace(run_id="r"), "r"), ObjectStoreTransport)


def test_shm_renames_into_place_and_keeps_the_last_versions(tmp_path):
    transport = ShmTransport("r", root=str(tmp_path))
    for version in range(1, 5):
        staged = transport.staging_path(version)
        staged.write_bytes(b"w%d" % version)
        assert asyncio.run(transport.put(version, staged)) == str(transport.dir / f"weights-v{version}.safetensors")
    assert sorted(p.name for p in transport.dir.iterdir()) == \
        [f"weights-v{v}.safetensors" for v in range(5 - KEEP_VERSIONS, 5)]
    transport.close()
    assert not transport.dir.exists()


def test_a_notice_for_a_shm_file_is_read_where_it_lies(tmp_path):
    path = tmp_path / "w.safetensors"
    path.write_bytes(b"abc")
    notice = weights_notice(run_id="r", version=2, transport="shm", location=str(path),
                            sha256=hashlib.sha256(b"abc").hexdigest(), size_bytes=3, step=1)
    check_notice(notice, "r")
    got = asyncio.run(local_file(notice, run_id="r", reader="a", cache_dir=tmp_path, fetch_object=None))
    assert got == (path, False, None)


def test_an_object_store_notice_is_fetched_and_a_failed_fetch_leaves_nothing(tmp_path):
    notice = weights_notice(run_id="r", version=3, transport="objectstore", location="weights-v3",
                            sha256="a" * 64, size_bytes=3, step=2)

    async def fetch(name, dest):
        dest.write_bytes(b"abc")
        return "a" * 64

    async def broken(name, dest):
        dest.write_bytes(b"ab")
        raise ConnectionError("gone")

    path, fetched, verified = asyncio.run(local_file(notice, run_id="r", reader="a", cache_dir=tmp_path,
                                                     fetch_object=fetch))
    assert (path.parent, path.read_bytes(), fetched, verified) == (tmp_path, b"abc", True, "a" * 64)
    path.unlink()
    with pytest.raises(ConnectionError):
        asyncio.run(local_file(notice, run_id="r", reader="a", cache_dir=tmp_path, fetch_object=broken))
    assert list(tmp_path.iterdir()) == []
