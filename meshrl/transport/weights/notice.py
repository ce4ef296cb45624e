"""The `WeightsNotice`: what a publisher announces for each version, and what a receiver accepts.

The notice is separate from the transport, so the rollout side can verify what it loaded
whatever carried it: `transport` names how the bytes travel (`TRANSPORTS`), `location` where
to read them (a file path for `shm`, an object name for `objectstore`, the learner's
tcp://HOST:PORT for `collective`), `sha256` or `blake3` (Digests below) and `size_bytes` what
they must be (for `collective`: the sha256 and byte count of the transfer's manifest,
collective.py).

Digests. The digests a weights notice may carry: `sha256`, or `blake3` (the shm transport's).

BLAKE3 (O'Connor, Aumasson, Neves, Wilcox-O'Hearn 2020) is a cryptographic hash like SHA-256
— a swapped or corrupted file cannot be made to match — and several times faster on one
core (docs/benchmarks.md, "The learner on a GPU", digest speed); it also spreads over cores
(`max_threads=AUTO`) on bigger hosts. The shm transport's file is hashed twice per push (the
learner while writing it, each replica before loading it), so its digest is BLAKE3. The object store keeps SHA-256: NATS checks each object's SHA-256 while
fetching it, and the replica reuses that check instead of hashing again.

Unkeyed: the notice that carries the digest travels on the run's authenticated bus and the
file lies in the run user's private directory (send.py), so a key would guard against no
one who could not already forge the notice.

Signatures. Weights notices are signed by the learner with the run's key (meshrl.security.run_key).

A notice says which bytes to load and where; only the learner may write it, and the NATS
permissions say so (subjects.py), but whatever lands under the run KV's notice key is
read by every replica (the server stores a JetStream API answer aimed there, too). With the
run's verify key, a replica loads only a notice the learner signed:

    sign_notice(notice, signer)          # the learner, before it puts the notice
    check_signature(notice, verifier)    # the rollout: WeightsRejected unless signed by the run's key
"""

from __future__ import annotations

import hashlib
import time

from meshrl.api.common.v1 import common_pb2 as pb

TRANSPORTS = ("shm", "objectstore", "collective")
DIGESTS = ("sha256", "blake3")
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


def new_digest(kind: str):
    """A fresh hasher (`update`, `hexdigest`) of `kind`."""
    if kind == "sha256":
        return hashlib.sha256()
    if kind == "blake3":
        from blake3 import blake3  # lazy: the learner's benchmarks run where only torch is

        return blake3(max_threads=blake3.AUTO)
    raise ValueError(f"unknown digest {kind!r}; expected one of {', '.join(DIGESTS)}")


def notice_digest(notice) -> tuple[str, str]:
    """(kind, hex) the notice announces: its blake3 when set, else its sha256."""
    return ("blake3", notice.blake3) if notice.blake3 else ("sha256", notice.sha256)


def notice_payload(notice: pb.WeightsNotice) -> bytes:
    """What is signed: the notice serialized deterministically, its signature field empty."""
    unsigned = pb.WeightsNotice()
    unsigned.CopyFrom(notice)
    unsigned.ClearField("signature")
    return unsigned.SerializeToString(deterministic=True)


def sign_notice(notice: pb.WeightsNotice, signer) -> pb.WeightsNotice:
    if signer is not None:
        notice.signature = signer.sign(notice_payload(notice))
    return notice


def check_signature(notice: pb.WeightsNotice, verifier) -> None:
    """No verifier: nothing to check (a run without keys). Else the learner's signature."""
    if verifier is None or verifier.valid(notice_payload(notice), notice.signature):
        return
    state = "is not signed" if not notice.signature else "has a signature the run's key does not verify"
    raise WeightsRejected(
        f"notice for v{notice.version} {state} ({verifier.source}): only the run's learner "
        "signs weights notices; refusing it"
    )
