"""The sending side: where the publisher writes a version's file, and how rollout gets to read it.

- `shm`: a safetensors file under /dev/shm on this host (fastest; one host only), written
  in place (a temporary name, then a rename: readers never see a half-written file),
- `objectstore`: the JetStream object store (any number of replicas on any host), put from
  a staging file in /dev/shm that is deleted afterwards.
Only the last `KEEP_VERSIONS` versions are kept; `close()` removes the run's files.

    transport = transport_for("shm", bus, run_id)
    staged = transport.staging_path(version)      # write the safetensors file here
    location = await transport.put(version, staged)   # goes into the notice (notice.py)
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Protocol

from meshrl.transport.bus import subjects as names

KEEP_VERSIONS = 2


def shm_dir(run_id: str, root: str = "/dev/shm") -> Path:
    base = Path(root) if Path(root).is_dir() else Path("/tmp")
    path = base / names.shm_prefix(run_id)
    return path  # made by the first staging_path(): a run that fails to start leaves nothing


class Transport(Protocol):
    name: str

    def staging_path(self, version: int) -> Path:
        """Where the publisher writes the file for `version`."""

    async def put(self, version: int, staged: Path) -> str:
        """Make the staged file readable by rollout; return the location for the notice."""

    def close(self) -> None:
        """At the publisher's exit: remove this run's files (tmpfs pages are memory until then)."""


class ShmTransport:
    name = "shm"

    def __init__(self, run_id: str, root: str = "/dev/shm"):
        self.dir = shm_dir(run_id, root)

    def staging_path(self, version: int) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir / f"weights-v{version}.tmp"

    async def put(self, version: int, staged: Path) -> str:
        path = self.dir / f"weights-v{version}.safetensors"
        os.replace(staged, path)  # readers never see a half-written file
        for old in self.dir.glob("weights-v*.safetensors"):
            if int(old.stem.split("-v")[1]) <= version - KEEP_VERSIONS:
                old.unlink(missing_ok=True)
        return str(path)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


class ObjectStoreTransport:
    name = "objectstore"

    def __init__(self, bus, root: str = "/dev/shm"):
        self.bus, self.dir = bus, shm_dir(f"{bus.run_id}-staging", root)

    def staging_path(self, version: int) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir / f"weights-v{version}.safetensors"

    async def put(self, version: int, staged: Path) -> str:
        name = names.weights_object_name(version)
        try:
            await self.bus.weights.put_file(name, staged)
        finally:
            staged.unlink(missing_ok=True)
        await self.bus.weights.prune(keep=KEEP_VERSIONS)
        return name

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def transport_for(kind: str, bus, run_id: str) -> Transport:
    """The transport `learner.weights_transport` names: "objectstore", else "shm"."""
    if kind == ObjectStoreTransport.name:
        return ObjectStoreTransport(bus)
    return ShmTransport(run_id)
