"""The receiving side: a `WeightsNotice` → an open file on this host whose bytes are the notice's.

- `shm`: `location` is a file path on this host (the learner writes it in its private
  directory under /dev/shm); it is read where it lies.
- `objectstore`: `location` is an object name in the run's JetStream object store; it is
  fetched into a new private directory under `cache_dir` (removed once loaded).

Either way `open_verified` opens the file without following links, refuses one that is not
this user's own in this user's own 0700 directory (meshrl.transport.private_paths: another
local user could otherwise make or swap it), checks its bytes against the notice's
`size_bytes` and digest (`blake3` when set, else `sha256`: meshrl.transport.weights.notice)
through that open file, and keeps it open: the engine loads
`opened.path`, which names the checked file itself, so a file put in its place after the
check is never the one loaded. The object store is reached through one callable, so this
file does not depend on the bus's API: `fetch_object(name, dest_path) -> sha256 hex` (the
checksum the fetch already verified the bytes against; when it equals the notice's, the
file is not hashed a second time).

    async with local_file(notice, run_id=..., reader=..., cache_dir=..., fetch_object=...) as (path, sha):
        with open_verified(path, notice, sha) as opened:
            engine.load(opened.path)
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import AsyncIterator, Awaitable, Callable

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import subjects as names
from meshrl.transport.private_paths import UnsafePath, fd_path, make_private_dir, open_private_file
from meshrl.transport.weights.notice import WeightsRejected, new_digest, notice_digest

HASH_CHUNK = 8 << 20

FetchObject = Callable[[str, Path], Awaitable]


def fd_digest(fd: int, kind: str = "sha256") -> tuple[str, int]:
    """(hex digest of `kind`, size in bytes) of an open file, read from its start in 8 MiB chunks."""
    digest, size = new_digest(kind), 0
    while chunk := os.pread(fd, HASH_CHUNK, size):
        digest.update(chunk)
        size += len(chunk)
    return digest.hexdigest(), size


def file_digest(path: Path, kind: str = "sha256") -> tuple[str, int]:
    """(hex digest of `kind`, size in bytes) of a file."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return fd_digest(fd, kind)
    finally:
        os.close(fd)


class OpenedWeights:
    """A verified weights file, held open: `path` names these very bytes in any process of
    this user until `close()`."""

    def __init__(self, fd: int):
        self.fd, self.path = fd, fd_path(fd)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> "OpenedWeights":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _open_private(path: Path, version: int) -> int:
    try:
        return open_private_file(path)
    except FileNotFoundError:
        raise WeightsRejected(f"weights v{version}: {path} does not exist on this host") from None
    except UnsafePath as err:
        raise WeightsRejected(f"weights v{version}: refusing {path}: {err}") from None


def open_verified(path: Path, notice: pb.WeightsNotice, verified_sha256: str | None = None) -> OpenedWeights:
    """Open `path` safely and raise WeightsRejected unless its size and digest equal the
    notice's. `verified_sha256`: a sha256 the bytes were already checked against while
    fetched into this replica's own private directory."""
    fd = _open_private(Path(path), notice.version)
    try:
        _verify(fd, path, notice, verified_sha256)
    except BaseException:
        os.close(fd)
        raise
    return OpenedWeights(fd)


def _verify(fd: int, path, notice: pb.WeightsNotice, verified_sha256: str | None) -> None:
    size = os.fstat(fd).st_size
    if size != notice.size_bytes:
        raise WeightsRejected(
            f"weights v{notice.version}: {path} has {size} bytes, the notice "
            f"says {notice.size_bytes}; refusing a truncated or foreign file"
        )
    kind, expected = notice_digest(notice)
    reusable = kind == "sha256" and verified_sha256 == expected
    got = expected if reusable else fd_digest(fd, kind)[0]
    if got != expected:
        raise WeightsRejected(
            f"weights v{notice.version}: {kind} of {path} is {got}, the notice "
            f"says {expected}; refusing corrupted or mismatched bytes"
        )


@contextlib.asynccontextmanager
async def local_file(
    notice: pb.WeightsNotice, *, run_id: str, reader: str, cache_dir: Path, fetch_object: FetchObject | None
) -> AsyncIterator[tuple[Path, str | None]]:
    """(path to read, the sha256 the fetch verified or None). A fetched copy lives in a new
    private directory named after `reader` (a replica id), removed on exit."""
    if notice.transport == "shm":
        yield Path(notice.location), None
        return
    if fetch_object is None:
        raise WeightsRejected("notice uses the object store but this replica has no bus")
    private = make_private_dir(Path(cache_dir), f"{names.shm_prefix(run_id)}-{reader}")
    try:
        verified = await fetch_object(notice.location, private / f"weights-v{notice.version}.safetensors")
        yield private / f"weights-v{notice.version}.safetensors", verified if isinstance(verified, str) else None
    finally:
        shutil.rmtree(private, ignore_errors=True)
