"""Publishing new weights: write the safetensors file once, hand it to a transport, announce a notice.

The transports and the notice are shared with the rollout side (meshrl.transport.weights);
what is the learner's own is here: which tensors go out (tied embeddings once), in which
dtype (the engines' bf16 when configured; the fp32 masters are never touched), and when.

Off the trainer's critical path (`learner.push_in_background`, on by default): `publish`
only stages the weights into reusable host buffers on the trainer thread
(weights_staging.py: pinned memory and a side stream on CUDA, so it returns at once there;
one memcpy per tensor on CPU) and returns; the file write, its digest, the transport's put
and the notice run in the background on an export thread of their own while the next step
trains. `drain()` awaits that push (the loop calls it before the next push and at the end)
and returns its figures. The file is written straight from the buffers with the digest
computed on the way (`meshrl.transport.weights.file`): BLAKE3 for shm (its file is
hashed by the learner and by every replica; meshrl.transport.weights.notice), SHA-256 for
the object store (whose fetch already checks it). The cost is one host copy of the weights
in the push dtype, kept between pushes; `push_in_background: false` writes from the live
tensors on the trainer thread instead, with no copy. The learner closes its transport when
it exits (services/learner/assemble.py).
A LoRA run that pushes its adapter (`model.lora.push: adapter`) writes the adapter's tensors
with PEFT's config in the file's metadata and announces `format: peft_adapter`
(meshrl.transport.weights.adapter); the rollout serves it as a LoRA adapter. It always goes
as a file (`auto` is shm then, also on CUDA).
With `weights_transport: collective` (the default on a CUDA learner: `auto`) no file is
written: `CollectivePublisher` keeps an on-device copy of each version and serves it to the
replicas that ask, over NCCL or gloo.
"""

from __future__ import annotations

import asyncio
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from meshrl.addresses import advertise_host, bind_host, host_port
from meshrl.security.run_key import signer_from_env
from meshrl.services.learner.trainer_thread import in_trainer_thread
from meshrl.services.learner.weights_staging import HostStaging, Staged
from meshrl.transport.weights import Transport, transport_for, weights_notice
from meshrl.transport.weights.adapter import ADAPTER_FORMAT, adapter_metadata
from meshrl.transport.weights.collective import WeightsServer, snapshot
from meshrl.transport.weights.file import write_safetensors
from meshrl.transport.weights.notice import sign_notice
from meshrl.transport.weights.run_version import announce


def rollout_tensors(state_dict: dict[str, torch.Tensor], *, tied_embeddings: bool = False) -> dict:
    """What the engines load. With tied embeddings `lm_head.weight` is the embedding itself:
    it is stored once and the engine re-ties it."""
    return {
        name: tensor for name, tensor in state_dict.items() if not (tied_embeddings and name.endswith("lm_head.weight"))
    }


def rollout_dtype(model_dtype: str) -> torch.dtype | None:
    """The dtype to push weights in: bf16 when the engines are configured for it
    (`model.dtype: bfloat16`); otherwise fp32 as trained (`auto` may resolve differently on
    another host, so it gets the full precision)."""
    return torch.bfloat16 if model_dtype == "bfloat16" else None


_EXPORT = ThreadPoolExecutor(max_workers=1, thread_name_prefix="weights-export")


async def in_export_thread(fn, /, *args):
    """File writes and hashing off the trainer thread (they release the GIL)."""
    return await asyncio.get_running_loop().run_in_executor(_EXPORT, functools.partial(fn, *args))


class WeightsPublisher:
    """Stage → (background) file + digest → transport → notice in the run KV (rollout
    replicas watch that key); module docstring."""

    def __init__(
        self,
        bus,
        transport: Transport,
        run_id: str,
        *,
        tied_embeddings: bool = False,
        dtype: torch.dtype | None = None,
        background: bool = True,
        signer=None,
        adapter_config: str | None = None,
    ):
        self.bus, self.transport, self.run_id = bus, transport, run_id
        # a LoRA adapter's PEFT config (JSON): the file carries it, the notice says so
        self.metadata = {"format": "pt"} if adapter_config is None else adapter_metadata(adapter_config)
        self.format = "safetensors" if adapter_config is None else ADAPTER_FORMAT
        self.tied_embeddings, self.dtype, self.background = tied_embeddings, dtype, background
        self.signer = signer  # the run's key (security/run_key.py): the notice is signed
        self.digest = "blake3" if getattr(transport, "name", "shm") == "shm" else "sha256"
        self.staging = HostStaging()
        self.pending: asyncio.Task | None = None

    def stage(self, state_dict: dict[str, torch.Tensor]) -> Staged:
        """The engines' tensors, in their dtype, copied into the host buffers (trainer thread)."""
        tensors = rollout_tensors(state_dict, tied_embeddings=self.tied_embeddings)
        if not self.background:  # no copy: written from the live tensors, cast on the way
            cast = {n: t.to(self.dtype) if self.dtype else t for n, t in tensors.items()}
            return Staged(cast, None)
        return self.staging.stage(tensors, self.dtype)

    def write_staged(self, staged: Staged, path: Path) -> tuple[str, int]:
        staged.wait()
        return write_safetensors(staged.tensors, path, self.metadata, digest=self.digest)

    def write(self, tensors: dict[str, torch.Tensor], path: Path) -> tuple[str, int]:
        """The file, in the rollout's dtype when it is known (half the bytes to write, move
        and load for bf16 engines); the learner's fp32 masters are never touched."""
        return self.write_staged(self.stage(tensors), path)

    async def publish(self, state_dict: dict[str, torch.Tensor], *, version: int, step: int) -> dict[str, float]:
        """Stage `version` and start its export; in the foreground unless `background`.
        Returns the trainer thread's share of it (`time/weights_stage`)."""
        await self.drain()  # its buffers are about to be reused
        t0 = time.perf_counter()
        # on the trainer thread, like every torch call of the learner (trainer_thread.py)
        staged = await in_trainer_thread(self.stage, state_dict)
        figures = {"time/weights_stage": time.perf_counter() - t0}
        if not self.background:
            exported = await self.export(staged, version, step, in_trainer_thread)
            return {**figures, **exported}
        self.pending = asyncio.create_task(
            self.export(staged, version, step, in_export_thread), name=f"weights-export-v{version}"
        )
        return figures

    async def export(self, staged: Staged, version: int, step: int, run_in) -> dict[str, float]:
        t0 = time.perf_counter()
        notice, written_s = await self.deliver(staged, version, step, run_in)
        await announce(self.bus.state, sign_notice(notice, self.signer))  # the run's version first, then the notice
        pushed_s = time.perf_counter() - t0 - written_s
        return {
            "time/weights_serialise": written_s,
            "time/weights_push": pushed_s,
            "weights/bytes": float(notice.size_bytes),
        }

    async def deliver(self, staged: Staged, version: int, step: int, run_in=None):
        """Write `version` and put it where the rollout fetches it: (its notice, unsigned and not
        yet announced; the write's seconds). `run_in(fn, *args)` runs the write on a learner
        thread; None runs it here (benchmarks, tests)."""
        t0 = time.perf_counter()
        path = self.transport.staging_path(version)
        digest, size = await run_in(self.write_staged, staged, path) if run_in else self.write_staged(staged, path)
        written_s = time.perf_counter() - t0
        location = await self.transport.put(version, path)
        notice = weights_notice(
            run_id=self.run_id,
            version=version,
            transport=self.transport.name,
            location=location,
            size_bytes=size,
            step=step,
            format=self.format,
            **{self.digest: digest},
        )
        return notice, written_s

    async def drain(self) -> dict[str, float]:
        """The push in flight, awaited: its figures ({} when none); its error if it failed."""
        task, self.pending = self.pending, None
        return {} if task is None else await task


class CollectivePublisher:
    """Snapshot → the learner's weights server → notice (meshrl.transport.weights.collective):
    the replicas receive straight into their engines, no file on any disk. `close()` stops
    the server at the learner's exit, like a file transport's."""

    def __init__(
        self,
        bus,
        run_id: str,
        *,
        port: int = 0,
        device: torch.device = torch.device("cpu"),
        tied_embeddings: bool = False,
        dtype: torch.dtype | None = None,
        signer=None,
    ):
        self.bus, self.run_id, self.device = bus, run_id, device
        self.tied_embeddings, self.dtype, self.signer = tied_embeddings, dtype, signer
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
        notice = weights_notice(
            run_id=self.run_id,
            version=version,
            transport="collective",
            location=self.location,
            sha256=manifest.digest(),
            size_bytes=size,
            step=step,
            format="tensors",
        )
        await announce(self.bus.state, sign_notice(notice, self.signer))  # the run's version first, then the notice
        return {
            "time/weights_serialise": t1 - t0,
            "time/weights_push": time.perf_counter() - t1,
            "weights/bytes": float(size),
        }

    async def drain(self) -> dict[str, float]:
        """Nothing in flight: `publish` returns once the copy is served."""
        return {}

    def close(self) -> None:
        self.server.close()


def transport_name(setting: str, device: torch.device, *, adapter: bool = False) -> str:
    """`learner.weights_transport`: auto = collective from a CUDA learner (NCCL straight into
    the engines, no host copy or file), else shm; shm for an adapter (vLLM loads it from files)."""
    if setting != "auto":
        return setting
    return "collective" if torch.device(device).type == "cuda" and not adapter else "shm"


def publisher_for(
    cfg, bus, run_id: str, *, device: torch.device, tied_embeddings: bool, adapter_config: str | None = None
):
    """(publisher, what to close at exit) for `learner.weights_transport`; `adapter_config`:
    the PEFT config of the LoRA adapter pushed alone (model.lora.push=adapter)."""
    dtype, signer = rollout_dtype(cfg.model.dtype), signer_from_env()  # the run's key: the learner's alone
    kind = transport_name(cfg.learner.weights_transport, device, adapter=adapter_config is not None)
    if kind == "collective":
        publisher = CollectivePublisher(
            bus,
            run_id,
            port=cfg.learner.weights_port,
            device=device,
            tied_embeddings=tied_embeddings,
            dtype=dtype,
            signer=signer,
        )
        return publisher, publisher
    transport = transport_for(kind, bus, run_id)
    return WeightsPublisher(
        bus,
        transport,
        run_id,
        tied_embeddings=tied_embeddings,
        dtype=dtype,
        background=cfg.learner.push_in_background,
        signer=signer,
        adapter_config=adapter_config,
    ), transport
