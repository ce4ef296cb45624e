"""Publishing new weights: write the safetensors file once, hand it to a transport, announce a notice.

The notice (version, sha256, size, where to read) is separate from the transport, so the
rollout side can verify what it loaded whatever carried it:
- `shm`: a safetensors file under /dev/shm on this host (fastest; one host only), written
  in place (a temporary name, then a rename: readers never see a half-written file),
- `objectstore`: the JetStream object store (any number of replicas on any host), put from
  a staging file in /dev/shm that is deleted afterwards.
The file is written straight from the tensors with the hash computed on the way
(`meshrl.inputs.models.safetensors_write`): no second copy of the model in memory, no second pass.
Only the last few versions are kept; the learner removes its files when it exits.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Protocol

import torch

from meshrl.transport.bus import subjects as names
from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.models.safetensors_write import write_safetensors
from meshrl.services.learner.trainer_thread import in_trainer_thread

KEEP_VERSIONS = 2


def rollout_tensors(state_dict: dict[str, torch.Tensor], *, tied_embeddings: bool = False) -> dict:
    """What the engines load. With tied embeddings `lm_head.weight` is the embedding itself:
    it is stored once and the engine re-ties it."""
    return {name: tensor for name, tensor in state_dict.items()
            if not (tied_embeddings and name.endswith("lm_head.weight"))}


def rollout_dtype(model_dtype: str) -> torch.dtype | None:
    """The dtype to push weights in: bf16 when the engines are configured for it
    (`model.dtype: bfloat16`); otherwise fp32 as trained (`auto` may resolve differently on
    another host, so it gets the full precision)."""
    return torch.bfloat16 if model_dtype == "bfloat16" else None


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
        """At the learner's exit: remove this run's files (tmpfs pages are memory until then)."""


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


class WeightsPublisher:
    """Serialise → transport → notice in the run KV (rollout replicas watch that key)."""

    def __init__(self, bus, transport: Transport, run_id: str, *, tied_embeddings: bool = False,
                 dtype: torch.dtype | None = None):
        self.bus, self.transport, self.run_id = bus, transport, run_id
        self.tied_embeddings, self.dtype = tied_embeddings, dtype

    def write(self, tensors: dict[str, torch.Tensor], staged: Path) -> tuple[str, int]:
        """The file, in the rollout's dtype when it is known (half the bytes to write, move
        and load for bf16 engines); the learner's fp32 masters are never touched."""
        if self.dtype is not None:
            tensors = {name: t.to(self.dtype) for name, t in tensors.items()}
        return write_safetensors(tensors, staged, {"format": "pt"})

    async def publish(self, state_dict: dict[str, torch.Tensor], *, version: int, step: int) -> dict[str, float]:
        t0 = time.perf_counter()
        staged = self.transport.staging_path(version)
        tensors = rollout_tensors(state_dict, tied_embeddings=self.tied_embeddings)
        # on the trainer thread, like every torch call of the learner (trainer_thread.py)
        sha256, size = await in_trainer_thread(self.write, tensors, staged)
        t1 = time.perf_counter()
        location = await self.transport.put(version, staged)
        notice = common_pb2.WeightsNotice(
            run_id=self.run_id, version=version, transport=self.transport.name,
            location=location, sha256=sha256, size_bytes=size,
            format="safetensors", step=step, published_unix=time.time())
        await self.bus.state.put(names.WEIGHTS_NOTICE_KEY, notice)
        t2 = time.perf_counter()
        return {"time/weights_serialise": t1 - t0, "time/weights_push": t2 - t1,
                "weights/bytes": float(size)}
