"""meshrl.transport.weights: how new weights travel from the learner to the rollout engines.

The learner writes one safetensors file per version, hands it to a transport and announces a
`WeightsNotice` (version, sha256, size, where to read) under the run KV's weights key; every
rollout replica watches that key, gets the file to its host, checks its bytes against the
notice and only then loads it. Which side does what:

    notice.py   the notice: what a publisher announces (`weights_notice`) and what a receiver
                accepts (`check_notice`); the transports' names
    send.py     the sending side: `Transport` (staging_path / put / close), `ShmTransport`
                (/dev/shm on one host), `ObjectStoreTransport` (the JetStream object store)
    receive.py  the receiving side: `local_file` (the notice → a path on this host),
                `open_verified` (opened without following links, owner and mode checked,
                size and sha256 checked through the open file, which is what the engine loads)
    collective.py  no file: the learner serves its tensors from memory over a two-member
                process group (NCCL on GPU, gloo on CPU) straight into the engine's worker
    run_version.py  the run's current version beside the notice (`announce`: learner) and
                which notices a replica may load against it (`refusal`: rollout)

The services hold only their own use of these: the learner's `WeightsPublisher`
(services/learner/weights.py: which tensors, in which dtype, on its trainer thread) and the
rollout's `WeightsUpdater` (services/rollout/weights.py: one notice at a time into vLLM).
"""
from meshrl.transport.weights.notice import TRANSPORTS, WeightsRejected, check_notice, weights_notice
from meshrl.transport.weights.receive import OpenedWeights, file_digest, local_file, open_verified
from meshrl.transport.weights.send import (KEEP_VERSIONS, ObjectStoreTransport, ShmTransport, Transport,
                                           transport_for)

__all__ = ["KEEP_VERSIONS", "TRANSPORTS", "ObjectStoreTransport", "OpenedWeights", "ShmTransport", "Transport",
           "WeightsRejected", "check_notice", "file_digest", "local_file", "open_verified", "transport_for",
           "weights_notice"]
