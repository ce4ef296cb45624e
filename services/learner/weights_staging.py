"""The learner's weights copied into reusable host buffers, so a push's write and hash can run
off the trainer thread while training goes on.

A file push (shm, object store) needs the weights on the host, in the engines' dtype, while
the next optimizer step changes the live parameters. `HostStaging.stage` copies each tensor
into a buffer kept from push to push (no allocation after the first). On CUDA, on a side
stream that first waits for the training stream: an on-device snapshot in the engines'
dtype (the collective transport's own, milliseconds on a GPU), then a `non_blocking` copy into
pinned host memory. The training stream waits only for the snapshot, so the host copy
overlaps the next step and the trainer thread never blocks; the snapshot's device memory is
freed once its copy is done. On CPU it is one memcpy (and cast) per tensor — much cheaper
than writing and hashing the file, which then run on the export thread (weights.py).

    staging = HostStaging()
    staged = staging.stage(tensors, torch.bfloat16)   # trainer thread: returns at once on CUDA
    staged.wait(); write(staged.tensors)              # export thread

The caller must not stage again before the previous staged copy has been written (the
buffers are reused); the learner awaits the previous push first.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Staged:
    tensors: dict[str, torch.Tensor]  # host tensors: the staging buffers
    done: "torch.cuda.Event | None"  # recorded after the copies on CUDA; None on CPU

    def wait(self) -> None:
        """Block until the copies have landed (CUDA); at once on CPU."""
        if self.done is not None:
            self.done.synchronize()


class HostStaging:
    def __init__(self):
        self.buffers: dict[str, torch.Tensor] = {}
        self.stream = None

    def buffer(self, name: str, like: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        held = self.buffers.get(name)
        if held is None or held.shape != like.shape or held.dtype != dtype:
            held = torch.empty(like.shape, dtype=dtype, device="cpu", pin_memory=like.is_cuda)
            self.buffers[name] = held
        return held

    def stage(self, tensors: dict[str, torch.Tensor], dtype: torch.dtype | None = None) -> Staged:
        """Copy `tensors` (cast to `dtype` when given) into the host buffers."""
        on_cuda = any(t.is_cuda for t in tensors.values())
        if not on_cuda:
            out = {n: self.buffer(n, t, dtype or t.dtype).copy_(t.detach()) for n, t in tensors.items()}
            return Staged(out, None)
        self.stream = self.stream or torch.cuda.Stream()
        training = torch.cuda.current_stream()
        self.stream.wait_stream(training)  # the update that made them is done
        with torch.cuda.stream(self.stream):
            snapshot = {n: t.detach().to(dtype or t.dtype, copy=True) for n, t in tensors.items()}
            snapped = torch.cuda.Event()
            snapped.record(self.stream)
            out = {}
            for name, t in snapshot.items():
                out[name] = self.buffer(name, t, t.dtype).copy_(t, non_blocking=True)
                t.record_stream(self.stream)  # freed once its copy is done, not before
            done = torch.cuda.Event()
            done.record(self.stream)
        training.wait_event(snapped)  # the next update may change the parameters after this
        return Staged(out, done)
