"""The learner's watch over the other services: the `service_down` alert's source.

Every `interval_s` it lists the replicas announced in the run KV (`services.<kind>.<replica>`,
put by every kind meshrl/topology.py marks watched once its gRPC server listens, deleted on a
clean stop), probes each with grpc.health.v1, and hands `{"rollout/rollout-0": True, ...}` to the
alert engine (`poll(health=...)`), whose `service_down` rule fires after
`alerts.service_down.consecutive_failures` failed probes in a row. A replica that crashed
keeps its entry, fails its probes and so is reported; one that stopped cleanly is gone
from the KV and is not.

Simplification: the KV is the only source of replicas, so a replica that never started
is not seen here (the launcher reports that one).
"""

from __future__ import annotations

import asyncio
import logging

from meshrl import topology
from meshrl.transport.bus.registry import service_entries
from meshrl.transport.rpc.channel import is_serving

log = logging.getLogger("meshrl.learner")
KINDS = topology.watched()


class HealthWatch:
    def __init__(self, kv, alerts, *, interval_s: float = 10.0, timeout_s: float = 2.0, kinds: tuple[str, ...] = KINDS):
        self.kv, self.alerts = kv, alerts
        self.interval_s, self.timeout_s, self.kinds = interval_s, timeout_s, kinds
        self.last: dict[str, bool] = {}

    async def probe(self) -> dict[str, bool]:
        """{kind/replica: serving} for every announced replica."""
        targets = [
            (f"{kind}/{e['replica']}", e["grpc"]) for kind in self.kinds for e in await service_entries(self.kv, kind)
        ]
        answers = await asyncio.gather(*(self._serving(address) for _, address in targets))
        return {name: ok for (name, _), ok in zip(targets, answers)}

    async def _serving(self, address: str) -> bool:
        try:
            return await is_serving(address, timeout=self.timeout_s)
        except Exception:  # an address that cannot even be dialled is not serving
            return False

    async def check_once(self) -> dict[str, bool]:
        self.last = await self.probe()
        self.alerts.poll(health=self.last)
        return self.last

    async def run(self) -> None:
        """Probe until cancelled; a failing probe round is logged, never fatal."""
        while True:
            try:
                await self.check_once()
            except Exception:
                log.exception("health watch: a probe round failed; trying again in %.0f s", self.interval_s)
            await asyncio.sleep(self.interval_s)
