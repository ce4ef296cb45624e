"""The receiving side: a `WeightsNotice` → a file on this host whose bytes are the notice's.

- `shm`: `location` is a file path on this host (the learner writes it under /dev/shm);
  it is read where it lies.
- `objectstore`: `location` is an object name in the run's JetStream object store; it is
  fetched to `cache_dir` first, and the caller deletes it once loaded.

Either way `verify_file` checks the bytes against the notice's `size_bytes` and `sha256`
before anything loads them. The object store is reached through one callable, so this file
does not depend on the bus's API: `fetch_object(name, dest_path) -> sha256 hex` (the checksum
the fetch already verified the bytes against; when it equals the notice's, the file is not
hashed a second time).
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Awaitable, Callable

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import subjects as names
from meshrl.transport.weights.notice import WeightsRejected

HASH_CHUNK = 8 << 20

FetchObject = Callable[[str, Path], Awaitable]


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of a file, read in 8 MiB chunks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def verify_file(path: Path, notice: pb.WeightsNotice, verified_sha256: str | None = None) -> None:
    """Raise WeightsRejected unless the file's size and sha256 equal the notice's.
    `verified_sha256`: a checksum the bytes were already checked against while fetched."""
    if not path.is_file():
        raise WeightsRejected(f"weights v{notice.version}: {path} does not exist on this host")
    size = path.stat().st_size
    if size != notice.size_bytes:
        raise WeightsRejected(f"weights v{notice.version}: {path} has {size} bytes, the notice "
                              f"says {notice.size_bytes}; refusing a truncated or foreign file")
    sha = verified_sha256 if verified_sha256 == notice.sha256 else file_digest(path)[0]
    if sha != notice.sha256:
        raise WeightsRejected(f"weights v{notice.version}: sha256 of {path} is {sha}, the notice "
                              f"says {notice.sha256}; refusing corrupted or mismatched bytes")


async def local_file(notice: pb.WeightsNotice, *, run_id: str, reader: str, cache_dir: Path,
                     fetch_object: FetchObject | None) -> tuple[Path, bool, str | None]:
    """(path to read, whether it was fetched and must be deleted afterwards, the sha256 the
    fetch verified or None). `reader` names the fetched copy (a replica id), so replicas
    sharing a host never write the same file."""
    if notice.transport == "shm":
        return Path(notice.location), False, None
    if fetch_object is None:
        raise WeightsRejected("notice uses the object store but this replica has no bus")
    dest = cache_dir / f"{names.shm_prefix(run_id)}-{reader}-v{notice.version}.safetensors"
    try:
        verified = await fetch_object(notice.location, dest)
    except Exception:
        dest.unlink(missing_ok=True)
        raise
    return dest, True, verified if isinstance(verified, str) else None
