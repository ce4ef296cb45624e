"""Weights notices signed by the learner with the run's key (meshrl.security.run_key).

A notice says which bytes to load and where; only the learner may write it, and the NATS
permissions say so (permissions.py), but whatever lands under the run KV's notice key is
read by every replica (the server stores a JetStream API answer aimed there, too). With the
run's verify key, a replica loads only a notice the learner signed:

    sign_notice(notice, signer)          # the learner, before it puts the notice
    check_signature(notice, verifier)    # the rollout: WeightsRejected unless signed by the run's key
"""

from __future__ import annotations

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.weights.notice import WeightsRejected


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
