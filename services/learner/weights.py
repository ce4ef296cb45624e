"""Publishing new weights: serialise once, hand the bytes to a transport, announce a notice.

The notice (version, sha256, size, where to read) is separate from the transport, so the
rollout side can verify what it loaded whatever carried it:
- `shm`: a safetensors file under /dev/shm on this host (fastest; one host only),
- `objectstore`: the JetStream object store (any number of replicas on any host).
Only the last few versions are kept.
"""
from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Protocol

import torch
from safetensors.torch import save

from meshrl.bus import subjects as names
from meshrl.common.v1 import common_pb2

KEEP_VERSIONS = 2
WEIGHTS_NOTICE_KEY = names.WEIGHTS_NOTICE_KEY


def serialise(state_dict: dict[str, torch.Tensor], *, tied_embeddings: bool = False) -> bytes:
    """Safetensors bytes of a state dict. With tied embeddings `lm_head.weight` is the
    embedding itself: it is stored once and the engine re-ties it."""
    tensors = {name: tensor.detach().contiguous().cpu() for name, tensor in state_dict.items()
               if not (tied_embeddings and name.endswith("lm_head.weight"))}
    return save(tensors, metadata={"format": "pt"})


class Transport(Protocol):
    name: str

    async def put(self, version: int, data: bytes) -> str:
        """Store the bytes; return the location a reader passes back to fetch them."""


class ShmTransport:
    name = "shm"

    def __init__(self, run_id: str, root: str = "/dev/shm"):
        base = Path(root) if Path(root).is_dir() else Path("/tmp")
        self.dir = base / f"meshrl-{run_id}"
        self.dir.mkdir(parents=True, exist_ok=True)

    async def put(self, version: int, data: bytes) -> str:
        path = self.dir / f"weights-v{version}.safetensors"
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # readers never see a half-written file
        for old in self.dir.glob("weights-v*.safetensors"):
            if int(old.stem.split("-v")[1]) <= version - KEEP_VERSIONS:
                old.unlink(missing_ok=True)
        return str(path)


class ObjectStoreTransport:
    name = "objectstore"

    def __init__(self, bus):
        self.bus = bus

    async def put(self, version: int, data: bytes) -> str:
        name = names.weights_object_name(version)
        await self.bus.weights.put_bytes(name, data)
        await self.bus.weights.prune(keep=KEEP_VERSIONS)
        return name


class WeightsPublisher:
    """Serialise → transport → notice in the run KV (rollout replicas watch that key)."""

    def __init__(self, bus, transport: Transport, run_id: str, *, tied_embeddings: bool = False):
        self.bus, self.transport, self.run_id = bus, transport, run_id
        self.tied_embeddings = tied_embeddings

    async def publish(self, state_dict: dict[str, torch.Tensor], *, version: int, step: int) -> dict[str, float]:
        t0 = time.perf_counter()
        data = serialise(state_dict, tied_embeddings=self.tied_embeddings)
        t1 = time.perf_counter()
        location = await self.transport.put(version, data)
        notice = common_pb2.WeightsNotice(
            run_id=self.run_id, version=version, transport=self.transport.name,
            location=location, sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data),
            format="safetensors", step=step, published_unix=time.time())
        await self.bus.state.put(WEIGHTS_NOTICE_KEY, notice)
        t2 = time.perf_counter()
        return {"time/weights_serialise": t1 - t0, "time/weights_push": t2 - t1,
                "weights/bytes": float(len(data))}
