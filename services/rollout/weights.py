"""A `WeightsNotice` → a verified local safetensors file → weights loaded in place → `WeightsLoaded`.

Transports (the notice says which):
- `shm`: `location` is a file path on this host (the learner writes it under /dev/shm);
  it is read where it lies.
- `objectstore`: `location` is an object name in the run's JetStream object store; it is
  fetched to `cache_dir` (default /dev/shm) first and deleted once loaded (vLLM then holds
  the weights in memory).

Either way the bytes are checked against the notice's `size_bytes` and `sha256` BEFORE the
engine is touched: a mismatch is refused, reported (`WeightsLoaded(ok=False, error=...)`)
and the replica keeps serving the version it holds. A notice for a version at or below the
held one is a no-op (the KV watch replays the latest value on start and after reconnects).

The bus is reached through two callables, so this file does not depend on its API:
`fetch_object(name, dest_path) -> sha256 hex` (the checksum the fetch already verified the
bytes against; when it equals the notice's, the file is not hashed a second time) and
`publish_loaded(WeightsLoaded)`.
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from pathlib import Path
from typing import Awaitable, Callable

from meshrl.transport.bus import subjects as names
from meshrl.api.common.v1 import common_pb2 as pb

log = logging.getLogger(__name__)

HASH_CHUNK = 8 << 20
TRANSPORTS = ("shm", "objectstore")


class WeightsRejected(Exception):
    """The notice or the bytes it points at cannot be loaded; the old version stays."""


def file_digest(path: Path) -> tuple[str, int]:
    """(sha256 hex, size in bytes) of a file, read in 8 MiB chunks."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def check_notice(notice: pb.WeightsNotice, run_id: str) -> None:
    """Refuse notices this replica cannot act on, naming the field and what is allowed."""
    if notice.run_id and notice.run_id != run_id:
        raise WeightsRejected(f"notice is for run {notice.run_id!r}, this replica serves {run_id!r}")
    if notice.transport not in TRANSPORTS:
        raise WeightsRejected(f"notice transport={notice.transport!r}; allowed: {', '.join(TRANSPORTS)}")
    if notice.format not in ("", "safetensors"):
        raise WeightsRejected(f"notice format={notice.format!r}; only safetensors is supported")
    if not notice.sha256 or not notice.size_bytes:
        raise WeightsRejected(f"notice for v{notice.version} has no sha256/size_bytes; the "
                              f"publisher must fill both so the bytes can be verified")


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


class WeightsUpdater:
    """Applies notices to a `RolloutEngine` one at a time; reports each outcome."""

    def __init__(self, engine, *, run_id: str, replica_id: str,
                 fetch_object: Callable[[str, Path], Awaitable] | None = None,
                 publish_loaded: Callable[[pb.WeightsLoaded], Awaitable] | None = None,
                 cache_dir: str | Path = "/dev/shm"):
        self.engine, self.run_id, self.replica_id = engine, run_id, replica_id
        self.fetch_object, self.publish_loaded = fetch_object, publish_loaded
        cache = Path(cache_dir)
        self.cache_dir = cache if cache.is_dir() else Path("/tmp")
        self._lock = asyncio.Lock()

    async def apply(self, notice: pb.WeightsNotice) -> pb.WeightsLoaded | None:
        """Load the notice's weights unless already held; publish and return the outcome.

        Returns None (and publishes nothing) for the version held. A lower version is loaded
        too: the notice is the run's truth, and it goes back when a learner resumes from a
        checkpoint older than its last push. Keeping the newer, orphaned weights would stamp
        every group with a version the learner never trained, and it drops them all.
        """
        async with self._lock:
            if notice.version == self.engine.version:
                return None
            began = time.perf_counter()
            try:
                await self._load(notice)
                report = pb.WeightsLoaded(ok=True, load_s=time.perf_counter() - began)
            except Exception as err:  # any failure keeps the old weights; report it, don't die
                log.error("%s: refused weights v%d: %s", self.replica_id, notice.version, err)
                report = pb.WeightsLoaded(ok=False, error=f"{type(err).__name__}: {err}",
                                          load_s=time.perf_counter() - began)
            report.run_id, report.replica_id, report.version = self.run_id, self.replica_id, notice.version
            if self.publish_loaded is not None:
                await self.publish_loaded(report)
            return report

    async def _load(self, notice: pb.WeightsNotice) -> None:
        check_notice(notice, self.run_id)
        path, fetched, verified = await self._local_file(notice)
        try:
            await asyncio.to_thread(verify_file, path, notice, verified)
            seconds = await self.engine.load_weights(path, notice.version)
            log.info("%s: loaded weights v%d (%.1f MB, %s) in %.2f s", self.replica_id,
                     notice.version, notice.size_bytes / 1e6, notice.transport, seconds)
        finally:
            if fetched:
                path.unlink(missing_ok=True)

    async def _local_file(self, notice: pb.WeightsNotice) -> tuple[Path, bool, str | None]:
        """(path to read, whether we fetched it and must delete it afterwards, the sha256
        the fetch verified or None)."""
        if notice.transport == "shm":
            return Path(notice.location), False, None
        if self.fetch_object is None:
            raise WeightsRejected("notice uses the object store but this replica has no bus")
        name = f"{names.shm_prefix(self.run_id)}-{self.replica_id}-v{notice.version}.safetensors"
        dest = self.cache_dir / name
        try:
            verified = await self.fetch_object(notice.location, dest)
        except Exception:
            dest.unlink(missing_ok=True)
            raise
        return dest, True, verified if isinstance(verified, str) else None
