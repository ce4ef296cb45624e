"""The few collective operations a checkpoint needs, each a no-op without a process group.

One code path serves a plain `python` process (no process group: DCP runs with
`no_dist=True`) and torchrun ranks with FSDP2 (every rank writes its own shards).
"""

from __future__ import annotations

import torch.distributed as dist


def active() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if active() else 0


def world_size() -> int:
    return dist.get_world_size() if active() else 1


def barrier() -> None:
    if active():
        dist.barrier()


def broadcast_from_main(value):
    """Rank 0's `value` on every rank (any picklable object)."""
    if not active():
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]
