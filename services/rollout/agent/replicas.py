"""The live replicas of a run's built-in environment, read from the run KV.

Replicas that meshrl launches announce themselves under `services.environment.<replica>`
(meshrl.transport.bus.registry) like every gRPC service of a run. `KvReplicas` keeps the
list fresh (every `every_s` seconds) so the client spreads new episodes over replicas that
join and stops sending new ones to replicas that left; an episode stays on the replica
that answered its Reset.

    replicas = KvReplicas(bus.state)
    await replicas.wait(timeout_s=60)             # before work starts: until one is announced
    client = EnvironmentClient(settings, addresses=replicas)
    asyncio.create_task(replicas.run())           # until cancelled
"""

from __future__ import annotations

import asyncio
import logging

from meshrl.transport.bus.registry import service_addresses

log = logging.getLogger(__name__)
KIND = "environment"


class KvReplicas:
    def __init__(self, state, every_s: float = 2.0):
        self.state, self.every_s = state, every_s
        self.addresses: list[str] = []

    def __call__(self) -> list[str]:
        return self.addresses

    async def refresh(self) -> list[str]:
        found = await service_addresses(self.state, KIND)
        if found != self.addresses:
            log.info("environment replicas: %s", ", ".join(found) or "none")
        self.addresses = found
        return found

    async def wait(self, timeout_s: float) -> list[str]:
        """Refresh until at least one replica is announced or `timeout_s` passed (then the
        list stays empty, with a warning: episodes fail UNAVAILABLE until one appears)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not await self.refresh() and loop.time() < deadline:
            await asyncio.sleep(min(0.5, self.every_s))
        if not self.addresses:
            log.warning(
                "no environment replica announced in the run KV after %g s; groups of environment "
                "tasks are dropped until one is (is the environment service running?)",
                timeout_s,
            )
        return self.addresses

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                await self.refresh()
            except Exception as err:  # noqa: BLE001 - NATS reconnecting: keep the last list, try again
                log.warning("could not list environment replicas: %r", err)
