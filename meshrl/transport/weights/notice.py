"""The `WeightsNotice`: what a publisher announces for each version, and what a receiver accepts.

The notice is separate from the transport, so the rollout side can verify what it loaded
whatever carried it: `transport` names how the bytes travel (`TRANSPORTS`), `location` where
to read them (a file path for `shm`, an object name for `objectstore`, the learner's
tcp://HOST:PORT for `collective`), `sha256` or `blake3` (meshrl.transport.weights.digests) and `size_bytes` what
they must be (for `collective`: the sha256 and byte count of the transfer's manifest,
collective.py).
"""

from __future__ import annotations

import time

from meshrl.api.common.v1 import common_pb2 as pb

TRANSPORTS = ("shm", "objectstore", "collective")
# peft_adapter: a LoRA adapter with PEFT's config in the file's metadata (adapter.py)
FORMATS = {
    "shm": ("", "safetensors", "peft_adapter"),
    "objectstore": ("", "safetensors", "peft_adapter"),
    "collective": ("tensors",),
}


class WeightsRejected(Exception):
    """The notice or the bytes it points at cannot be loaded; the old version stays."""


def weights_notice(
    *,
    run_id: str,
    version: int,
    transport: str,
    location: str,
    size_bytes: int,
    step: int,
    sha256: str = "",
    blake3: str = "",
    format: str = "safetensors",
) -> pb.WeightsNotice:
    """The notice for weights already readable at `location` through `transport`; one of
    `sha256`, `blake3` is their digest."""
    return pb.WeightsNotice(
        run_id=run_id,
        version=version,
        transport=transport,
        location=location,
        sha256=sha256,
        blake3=blake3,
        size_bytes=size_bytes,
        format=format,
        step=step,
        published_unix=time.time(),
    )


def check_notice(notice: pb.WeightsNotice, run_id: str) -> None:
    """Refuse notices this replica cannot act on, naming the field and what is allowed."""
    if notice.run_id and notice.run_id != run_id:
        raise WeightsRejected(f"notice is for run {notice.run_id!r}, this replica serves {run_id!r}")
    if notice.transport not in TRANSPORTS:
        raise WeightsRejected(f"notice transport={notice.transport!r}; allowed: {', '.join(TRANSPORTS)}")
    if notice.format not in FORMATS[notice.transport]:
        raise WeightsRejected(
            f"notice format={notice.format!r} with transport {notice.transport}; "
            f"allowed: {', '.join(repr(f) for f in FORMATS[notice.transport])}"
        )
    if not (notice.sha256 or notice.blake3) or not notice.size_bytes:
        raise WeightsRejected(
            f"notice for v{notice.version} has no sha256/blake3 or no "
            f"size_bytes; the publisher must fill a digest and the size so "
            f"the bytes can be verified"
        )
