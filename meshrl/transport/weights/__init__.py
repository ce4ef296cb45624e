"""meshrl.transport.weights: the weights protocol, both sides, in one folder: how new weights
travel from the learner to the rollout engines.

The learner writes one safetensors file per version, hands it to a transport and announces a
`WeightsNotice` (version, sha256, size, where to read) under the run KV's weights key; every
rollout replica watches that key, gets the file to its host, checks its bytes against the
notice and only then loads it. Which file does what:

    notice.py   the notice: what a publisher announces (`weights_notice`) and what a receiver
                accepts (`check_notice`); the transports' names; its digests (sha256, blake3:
                `new_digest`) and the learner's signature (`sign_notice`, `check_signature`)
    file.py     the file: a state dict written as safetensors straight from the tensors,
                hashed on the way (`write_safetensors`)
    send.py     the sending side of a file: `Transport` (staging_path / put / close),
                `ShmTransport` (/dev/shm on one host), `ObjectStoreTransport` (JetStream object store)
    receive.py  the receiving side of a file: `local_file` (the notice -> a path on this host),
                `open_verified` (opened without following links, owner and mode checked, size
                and sha256 checked through the open file, which is what the engine loads)
    collective.py  no file: the learner serves its tensors from memory over a two-member
                process group (NCCL on GPU, gloo on CPU) straight into the engine's worker
    run_version.py  the run's current version beside the notice (`announce`: learner) and
                which notices a replica may load against it (`refusal`: rollout)
    follow.py   the rollout's side: `WeightsFollower` watches the key and loads the run's
                current version, through
    update.py   `WeightsUpdater`: one notice at a time, verified, into the replica's engine
    adapter.py  a LoRA adapter as one file (PEFT's config in its metadata) and the PEFT
                directory the rollout unpacks it into for vLLM

The learner's own use is services/learner/weights.py (`WeightsPublisher`: which tensors, in
which dtype, staged on its trainer thread and pushed in the background; `CollectivePublisher`);
the rollout wires the follower and updater around its engine (services/rollout/main.py; the
engine's own load is services/rollout/engine.py and worker_extension.py).
"""

from meshrl.transport.weights.notice import TRANSPORTS, WeightsRejected, check_notice, weights_notice
from meshrl.transport.weights.receive import OpenedWeights, file_digest, local_file, open_verified
from meshrl.transport.weights.send import KEEP_VERSIONS, ObjectStoreTransport, ShmTransport, Transport, transport_for

__all__ = [
    "KEEP_VERSIONS",
    "TRANSPORTS",
    "ObjectStoreTransport",
    "OpenedWeights",
    "ShmTransport",
    "Transport",
    "WeightsRejected",
    "check_notice",
    "file_digest",
    "local_file",
    "open_verified",
    "transport_for",
    "weights_notice",
]
