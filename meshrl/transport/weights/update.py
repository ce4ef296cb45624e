"""A `WeightsNotice` → a verified local safetensors file → weights loaded in place → `WeightsLoaded`.

How the file reaches this host and how its bytes are checked is shared with the learner
(meshrl.transport.weights: `shm` is read where it lies, `objectstore` is fetched to
`cache_dir`, default /dev/shm, and deleted once loaded; vLLM then holds the weights in
memory; `collective` has no file: the engine's worker receives the tensors from the learner,
collective.py). What is the rollout's own is here: one notice at a time, into this replica's engine.

The file is opened without following links, must be this user's own in this user's own
0700 directory, and its bytes are checked against the notice's `size_bytes` and `sha256`
BEFORE the engine is touched; the engine then loads that open file (not its name, which
could be swapped after the check). A mismatch is refused, reported (`WeightsLoaded(ok=False, error=...)`) and the
replica keeps serving the version it holds. A notice for the version held is a no-op (the
KV watch replays the latest value on start and after reconnects).

With the run's verify key (MESHRL_RUN_VERIFY_KEY_FILE) a notice the learner did not sign is
refused before anything else (meshrl.transport.weights.notice).

A notice with `format: peft_adapter` (a LoRA run's `model.lora.push: adapter`) is a LoRA
adapter: its verified bytes are unpacked into a private PEFT directory of this replica
(adapter.py) and the engine serves it by name over the base it holds (`load_adapter`).

The bus is reached through two callables, so this file does not depend on its API:
`fetch_object(name, dest_path) -> sha256 hex` (see meshrl.transport.weights.receive) and
`publish_loaded(WeightsLoaded)`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Awaitable, Callable

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus import subjects as names
from meshrl.transport.weights import WeightsRejected, check_notice, local_file, open_verified
from meshrl.transport.weights.adapter import ADAPTER_FORMAT, AdapterDirs
from meshrl.transport.weights.collective import ask_for
from meshrl.transport.weights.notice import check_signature
from meshrl.transport.weights.receive import FetchObject

log = logging.getLogger(__name__)


class WeightsUpdater:
    """Applies notices to a `RolloutEngine` one at a time; reports each outcome."""

    def __init__(
        self,
        engine,
        *,
        run_id: str,
        replica_id: str,
        fetch_object: FetchObject | None = None,
        publish_loaded: Callable[[pb.WeightsLoaded], Awaitable] | None = None,
        cache_dir: str | Path = "/dev/shm",
        verifier=None,
    ):
        self.engine, self.run_id, self.replica_id = engine, run_id, replica_id
        self.verifier = verifier  # the run's verify key: only notices the learner signed (notice.py)
        self.fetch_object, self.publish_loaded = fetch_object, publish_loaded
        cache = Path(cache_dir)
        self.cache_dir = cache if cache.is_dir() else Path("/tmp")
        self.adapters = AdapterDirs(self.cache_dir, f"{names.shm_prefix(run_id)}-{replica_id}")
        self._lock = asyncio.Lock()

    async def apply(self, notice: pb.WeightsNotice) -> pb.WeightsLoaded | None:
        """Load the notice's weights unless already held; publish and return the outcome.

        Returns None (and publishes nothing) for the version held. A lower version is loaded
        too: a learner resuming from a checkpoint older than its last push moves the run back.
        Keeping the newer, orphaned weights would stamp every group with a version the learner
        never trained, and it drops them all. (Whether a notice is the run's current version
        at all is WeightsFollower's check, against the run state: run_version.py.)
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
                report = pb.WeightsLoaded(
                    ok=False, error=f"{type(err).__name__}: {err}", load_s=time.perf_counter() - began
                )
            return await self._report(notice, report)

    async def refuse(self, notice: pb.WeightsNotice, reason: str) -> pb.WeightsLoaded:
        """Report a notice refused before any load (WeightsFollower: not the run's version)."""
        log.error("%s: refused weights v%d: %s", self.replica_id, notice.version, reason)
        return await self._report(notice, pb.WeightsLoaded(ok=False, error=reason))

    async def _report(self, notice: pb.WeightsNotice, report: pb.WeightsLoaded) -> pb.WeightsLoaded:
        report.run_id, report.replica_id, report.version = self.run_id, self.replica_id, notice.version
        if self.publish_loaded is not None:
            await self.publish_loaded(report)
        return report

    async def _load(self, notice: pb.WeightsNotice) -> None:
        check_signature(notice, self.verifier)
        check_notice(notice, self.run_id)
        if notice.transport == "collective":
            return await self._receive(notice)
        async with local_file(
            notice, run_id=self.run_id, reader=self.replica_id, cache_dir=self.cache_dir, fetch_object=self.fetch_object
        ) as (path, verified):
            # the engine loads the very file that was checked (opened.path), not its name
            with await asyncio.to_thread(open_verified, path, notice, verified) as opened:
                seconds = await self._into_engine(opened, notice)
        log.info(
            "%s: loaded %s v%d (%.1f MB, %s) in %.2f s",
            self.replica_id,
            "adapter" if notice.format == ADAPTER_FORMAT else "weights",
            notice.version,
            notice.size_bytes / 1e6,
            notice.transport,
            seconds,
        )

    async def _into_engine(self, opened, notice: pb.WeightsNotice) -> float:
        if notice.format != ADAPTER_FORMAT:
            return await self.engine.load_weights(opened.path, notice.version)
        directory = await asyncio.to_thread(self.adapters.unpack, opened, notice.version)
        return await self.engine.load_adapter(directory, notice.version)

    def close(self) -> None:
        """At the replica's exit: remove its adapter directories."""
        self.adapters.close()

    async def _receive(self, notice: pb.WeightsNotice) -> None:
        """`collective`: take a ticket from the learner's weights server, check its manifest
        against the notice, then the engine's worker receives the tensors itself."""

        def accept(manifest) -> None:
            if manifest.digest() != notice.sha256 or manifest.nbytes() != notice.size_bytes:
                raise WeightsRejected(
                    f"weights v{notice.version} from {notice.location}: the transfer's manifest "
                    f"({manifest.nbytes()} bytes, {manifest.digest()[:12]}) is not the notice's "
                    f"({notice.size_bytes} bytes, {notice.sha256[:12]})"
                )

        ticket, manifest = await asyncio.to_thread(ask_for, notice.location, self.replica_id, notice.version, accept)
        seconds = await self.engine.receive_weights(notice.location, ticket, manifest.to_json(), notice.version)
        log.info(
            "%s: received weights v%d (%.1f MB, collective) in %.2f s",
            self.replica_id,
            notice.version,
            notice.size_bytes / 1e6,
            seconds,
        )
