"""Publishing new weights: write the safetensors file once, hand it to a transport, announce a notice.

The transports and the notice are shared with the rollout side (meshrl.transport.weights);
what is the learner's own is here: which tensors go out (tied embeddings once), in which
dtype (the engines' bf16 when configured; the fp32 masters are never touched), written on the
trainer thread. The file is written straight from the tensors with the hash computed on the
way (`meshrl.inputs.models.safetensors_write`): no second copy of the model in memory, no
second pass. The learner closes its transport when it exits (services/learner/assemble.py).
With `weights_transport: collective` no file is written: `CollectivePublisher` keeps a copy
of each version in memory and serves it to the replicas that ask, over NCCL or gloo.
"""
from __future__ import annotations

import time
from pathlib import Path

import torch

from meshrl.inputs.models.safetensors_write import write_safetensors
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.transport.addresses import advertise_host, bind_host, host_port
from meshrl.transport.weights import Transport, transport_for, weights_notice
from meshrl.transport.weights.collective import WeightsServer, snapshot
from meshrl.transport.weights.run_version import announce


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
        notice = weights_notice(run_id=self.run_id, version=version, transport=self.transport.name,
                                location=location, sha256=sha256, size_bytes=size, step=step)
        await announce(self.bus.state, notice)  # the run's version first, then the notice
        t2 = time.perf_counter()
        return {"time/weights_serialise": t1 - t0, "time/weights_push": t2 - t1,
                "weights/bytes": float(size)}


class CollectivePublisher:
    """Snapshot → the learner's weights server → notice (meshrl.transport.weights.collective):
    the replicas receive straight into their engines, no file on any disk. `close()` stops
    the server at the learner's exit, like a file transport's."""

    def __init__(self, bus, run_id: str, *, port: int = 0, device: torch.device = torch.device("cpu"),
                 tied_embeddings: bool = False, dtype: torch.dtype | None = None):
        self.bus, self.run_id, self.device = bus, run_id, device
        self.tied_embeddings, self.dtype = tied_embeddings, dtype
        self.server = WeightsServer(bind_host(), port)
        self.location = f"tcp://{host_port(advertise_host(), self.server.port)}"

    def copy(self, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """What the server holds: the engines' tensors, in their dtype, on this learner's
        device (NCCL sends from the GPU), never the live parameters training changes."""
        tensors = rollout_tensors(state_dict, tied_embeddings=self.tied_embeddings)
        return snapshot(tensors.items(), self.dtype, self.device)

    async def publish(self, state_dict: dict[str, torch.Tensor], *, version: int, step: int) -> dict[str, float]:
        t0 = time.perf_counter()
        manifest = self.server.offer(version, await in_trainer_thread(self.copy, state_dict))
        t1 = time.perf_counter()
        size = manifest.nbytes()
        notice = weights_notice(run_id=self.run_id, version=version, transport="collective",
                                location=self.location, sha256=manifest.digest(),
                                size_bytes=size, step=step, format="tensors")
        await announce(self.bus.state, notice)  # the run's version first, then the notice
        return {"time/weights_serialise": t1 - t0, "time/weights_push": time.perf_counter() - t1,
                "weights/bytes": float(size)}

    def close(self) -> None:
        self.server.close()


def publisher_for(cfg, bus, run_id: str, *, device: torch.device, tied_embeddings: bool):
    """(publisher, what to close at exit) for `learner.weights_transport`."""
    dtype = rollout_dtype(cfg.model.dtype)
    if cfg.learner.weights_transport == "collective":
        publisher = CollectivePublisher(bus, run_id, port=cfg.learner.weights_port, device=device,
                                        tied_embeddings=tied_embeddings, dtype=dtype)
        return publisher, publisher
    transport = transport_for(cfg.learner.weights_transport, bus, run_id)
    return WeightsPublisher(bus, transport, run_id, tied_embeddings=tied_embeddings, dtype=dtype), transport
