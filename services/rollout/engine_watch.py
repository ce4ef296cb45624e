"""The rollout replica's health follows its vLLM engine: a dead engine is NOT_SERVING, then an exit.

    await watch_engine(engine, server)     # in the service's work, beside the consumer

vLLM runs its engine core in a process of its own. When that process dies (OOM killer, a
crash in a kernel, a SIGKILL), AsyncLLM marks itself errored and every later request fails,
but the replica's process, its gRPC server and grpc.health.v1 would go on answering SERVING:
Kubernetes' gRPC probes, compose's HEALTHCHECK (`meshrl health`) and the learner's health
watch would keep a replica that cannot generate. So the watch checks the engine every
`every_s` seconds; once it is dead it reports NOT_SERVING for every service of the server
(clients and probes see it at once) and raises EngineDied, which ends the service's work:
the process exits 1 and its supervisor (the launcher, compose's restart policy, the
kubelet) starts a fresh replica with a fresh engine. Restarting vLLM in place is not tried:
its processes share memory with the dead one, and a new process is the runtime's job.

Tested with a real engine whose engine-core process is SIGKILLed:
tests/services/rollout/test_engine_death.py.
"""

from __future__ import annotations

import asyncio
import logging

from meshrl.transport.rpc import stop_serving

log = logging.getLogger(__name__)


class EngineDied(RuntimeError):
    """The replica's vLLM engine stopped; the replica cannot generate any more."""


async def watch_engine(engine, server, every_s: float = 1.0) -> None:
    """Return never while the engine lives; on its death: NOT_SERVING, then EngineDied."""
    while engine.alive:
        await asyncio.sleep(every_s)
    log.error(
        "%s: the vLLM engine died; reporting NOT_SERVING and exiting so the replica is restarted",
        engine.config.replica_id,
    )
    await stop_serving(server)
    raise EngineDied(
        f"rollout replica {engine.config.replica_id}: its vLLM engine died (the engine-core "
        f"process exited); the process exits so that its supervisor restarts it"
    )
