"""The sending side: where the publisher writes a version's file, and how rollout gets to read it.

- `shm`: a safetensors file under /dev/shm on this host (fastest; one host only), written
  in place (a temporary name, then a rename: readers never see a half-written file),
- `objectstore`: the JetStream object store (any number of replicas on any host), put from
  a staging file in /dev/shm that is deleted afterwards.
Only the last `KEEP_VERSIONS` versions are kept; `close()` removes the run's files.

Both write into a directory of their own, `/dev/shm/meshrl-<run id>-<random>`, made new
(mkdir fails on an existing name), 0700, and checked again before every write
(meshrl.transport.private_paths): /dev/shm is writable by every local user, and a
predictable name could be made first by one of them (then the files are theirs to swap).

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
from meshrl.transport.private_paths import check_private_dir, make_private_dir

KEEP_VERSIONS = 2


def shm_root(root: str = "/dev/shm") -> Path:
    """/dev/shm, or /tmp where there is none."""
    return Path(root) if Path(root).is_dir() else Path("/tmp")


class PrivateDir:
    """`root/<prefix>-<random>`, made on first use (a run that fails to start leaves nothing),
    checked private before each use."""

    def __init__(self, prefix: str, root: str = "/dev/shm"):
        self.prefix, self.root, self.path = prefix, shm_root(root), None

    def ready(self) -> Path:
        if self.path is None:
            self.path = make_private_dir(self.root, self.prefix)
        os.close(check_private_dir(self.path))  # not swapped or opened up since
        return self.path

    def remove(self) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)


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
        self._dir = PrivateDir(names.shm_prefix(run_id), root)

    @property
    def dir(self) -> Path | None:
        return self._dir.path

    def staging_path(self, version: int) -> Path:
        return self._dir.ready() / f"weights-v{version}.tmp"

    async def put(self, version: int, staged: Path) -> str:
        path = self._dir.ready() / f"weights-v{version}.safetensors"
        os.replace(staged, path)  # readers never see a half-written file
        for old in path.parent.glob("weights-v*.safetensors"):
            if int(old.stem.split("-v")[1]) <= version - KEEP_VERSIONS:
                old.unlink(missing_ok=True)
        return str(path)

    def close(self) -> None:
        self._dir.remove()


class ObjectStoreTransport:
    name = "objectstore"

    def __init__(self, bus, root: str = "/dev/shm"):
        self.bus, self._dir = bus, PrivateDir(f"{names.shm_prefix(bus.run_id)}-staging", root)

    def staging_path(self, version: int) -> Path:
        return self._dir.ready() / f"weights-v{version}.safetensors"

    async def put(self, version: int, staged: Path) -> str:
        name = names.weights_object_name(version)
        try:
            await self.bus.weights.put_file(name, staged)
        finally:
            staged.unlink(missing_ok=True)
        await self.bus.weights.prune(keep=KEEP_VERSIONS)
        return name

    def close(self) -> None:
        self._dir.remove()


def transport_for(kind: str, bus, run_id: str) -> Transport:
    """The transport `learner.weights_transport` names: "objectstore", else "shm"."""
    if kind == ObjectStoreTransport.name:
        return ObjectStoreTransport(bus)
    return ShmTransport(run_id)
