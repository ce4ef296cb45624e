"""Plain fetch for the learner: take up to N parsed messages, ack each when trained.

    batch = await bus.pull("ready", "learner", max_msgs=16, timeout=2.0)
    for d in batch: ...; await d.ack()

Unparseable bodies are dead-lettered here and never returned. An empty list means nothing
arrived within `timeout`, or the stream is between leaders (a cluster node died: the fetch
answers 503 until the election ends); the caller simply pulls again.
"""

import asyncio
import logging

import nats.errors

from meshrl.transport.bus.cancel import raise_if_cancelled
from meshrl.transport.bus.consumer import ConsumerSpec, pull_subscription
from meshrl.transport.bus.context import Delivery
from meshrl.transport.bus.dead import dead_letter
from meshrl.transport.bus.messages import BadPayload
from meshrl.transport.bus.origin import parse_delivery
from meshrl.transport.bus.retry import is_transient

log = logging.getLogger(__name__)
ELECTION_RETRY_S = 0.5


class Puller:
    """Caches one bound pull subscription per (stage, durable)."""

    def __init__(self, js, run_id: str, *, may_create: bool = True):
        self.js, self.run_id, self.may_create = js, run_id, may_create
        self._subs: dict[tuple[str, str], object] = {}

    async def _sub(self, stage: str, spec: ConsumerSpec):
        key = (stage, spec.durable)
        if key not in self._subs:
            self._subs[key] = await pull_subscription(self.js, self.run_id, stage, spec, may_create=self.may_create)
        return self._subs[key]

    async def pull(self, stage: str, spec: ConsumerSpec, max_msgs: int, timeout: float) -> list[Delivery]:
        sub = await self._sub(stage, spec)
        try:
            raw = await sub.fetch(max_msgs, timeout=timeout)
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            return []
        except nats.errors.Error as err:
            if not is_transient(err):
                raise
            log.warning("fetch on %s failed (%r): stream between leaders? pulling again", stage, err)
            await asyncio.sleep(ELECTION_RETRY_S)  # a 503 comes back at once: do not spin
            return []
        await raise_if_cancelled(raw)
        out = []
        for msg in raw:
            try:
                out.append(Delivery(parse_delivery(self.run_id, stage, msg), msg))
            except BadPayload as err:
                await dead_letter(self.js, self.run_id, stage, msg, err)
        return out

    async def close(self) -> None:
        for sub in self._subs.values():
            try:
                await sub.unsubscribe()
            except Exception:  # noqa: BLE001 - connection may be gone already
                pass
        self._subs.clear()
