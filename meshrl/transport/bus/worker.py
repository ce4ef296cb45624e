"""The durable pull-consumer loop every pipeline service runs.

    fetch → parse the stage's protobuf → await handler(message, ctx) → ack

The ack comes only after the handler returns, and the handler publishes its outputs
before returning, so a crash at any point loses nothing (the message is redelivered after
`ack_wait`; its outputs, if already published, are deduplicated by group id). A handler
that raises is nak'ed with `backoff[attempt]` delay; on its `max_deliver`-th failure the
message goes to the dead-letter subject and is terminated. A body that does not parse is
dead-lettered at once; a message whose every delivery timed out is dead-lettered from the
server's MAX_DELIVERIES advisory (one replica of the durable handles each, by queue group). Up to `concurrency` handlers run at once (vLLM batches them).
Cancel the task to stop: in-flight messages are nak'ed so another replica takes them now.
"""

import asyncio
import logging
from typing import Awaitable, Callable, Sequence

import nats.errors
from google.protobuf.message import Message

from meshrl.transport.bus.cancel import raise_if_cancelled
from meshrl.transport.bus.consumer import ConsumerSpec, pull_subscription, server_spec
from meshrl.transport.bus.context import WorkContext
from meshrl.transport.bus.dead import dead_letter, dead_letter_exhausted, max_deliveries_advisory
from meshrl.transport.bus.messages import BadPayload
from meshrl.transport.bus.origin import parse_delivery

log = logging.getLogger(__name__)
Handler = Callable[[Message, WorkContext], Awaitable[None]]
FETCH_TIMEOUT_S = 1.0


class Worker:
    def __init__(
        self,
        js,
        run_id: str,
        stage: str,
        spec: ConsumerSpec,
        handler: Handler,
        *,
        batch: int = 1,
        concurrency: int | None = None,
        backoff: Sequence[float] = (1.0, 5.0, 30.0),
        auto_in_progress: bool = False,
        may_create: bool = True,
    ):
        if batch < 1 or (concurrency is not None and concurrency < 1):
            raise ValueError(f"batch={batch}, concurrency={concurrency}: both must be >= 1")
        self.js, self.run_id, self.stage, self.spec, self.handler = js, run_id, stage, spec, handler
        self.batch = batch
        self.concurrency = concurrency or batch
        self.backoff = tuple(backoff) or (0.0,)
        self.auto_in_progress, self.may_create = auto_in_progress, may_create
        self.counts = {"acked": 0, "retried": 0, "dead": 0}

    async def run(self) -> None:
        sub = await pull_subscription(self.js, self.run_id, self.stage, self.spec, may_create=self.may_create)
        self.spec = await server_spec(sub, self.spec)  # heartbeats and retries follow the durable's own
        advisories = await self.js._nc.subscribe(
            max_deliveries_advisory(self.run_id, self.stage, self.spec.durable),
            queue=f"meshrl-dead-{self.spec.durable}",
            cb=self._on_exhausted,
        )
        inflight: set[asyncio.Task] = set()
        try:
            while True:
                inflight = {t for t in inflight if not t.done()}
                if len(inflight) >= self.concurrency:
                    await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                    continue
                fetched = await self._fetch(sub, min(self.batch, self.concurrency - len(inflight)))
                await raise_if_cancelled(fetched)
                for msg in fetched:
                    inflight.add(asyncio.create_task(self._process(msg)))
        finally:
            await _quietly(advisories.unsubscribe())
            await self._stop(sub, inflight)

    async def _fetch(self, sub, n: int) -> list:
        try:
            return await sub.fetch(n, timeout=FETCH_TIMEOUT_S)
        except (nats.errors.TimeoutError, asyncio.TimeoutError):
            return []
        except nats.errors.ConnectionClosedError:
            raise
        except nats.errors.Error as err:  # reconnecting, slow consumer, ...: try again soon
            log.warning("fetch on %s failed (%r); retrying", self.stage, err)
            await asyncio.sleep(0.5)
            return []

    async def _stop(self, sub, inflight: set[asyncio.Task]) -> None:
        for task in inflight:
            task.cancel()
        await asyncio.gather(*inflight, return_exceptions=True)
        try:
            await sub.unsubscribe()
        except Exception:  # noqa: BLE001 - connection may already be gone
            pass

    async def _process(self, msg) -> None:
        try:
            message = parse_delivery(self.run_id, self.stage, msg)
        except BadPayload as err:
            await self._dead(msg, err)
            return
        ctx = WorkContext(message, msg)
        beat = asyncio.create_task(self._heartbeat(ctx)) if self.auto_in_progress else None
        try:
            await self.handler(message, ctx)
        except asyncio.CancelledError:
            await _quietly(msg.nak())
            raise
        except Exception as err:  # noqa: BLE001 - any handler failure is retried or dead-lettered
            await self._failed(msg, err)
        else:
            await self._ack(msg)
        finally:
            if beat:
                beat.cancel()

    async def _ack(self, msg) -> None:
        try:
            await msg.ack()
            self.counts["acked"] += 1
        except Exception as err:  # noqa: BLE001 - it will be redelivered; its outputs dedup by id
            log.warning("ack of a %s message failed (%r): it will be redelivered", self.stage, err)

    async def _failed(self, msg, err: Exception) -> None:
        attempt = msg.metadata.num_delivered
        if attempt >= self.spec.max_deliver:
            await self._dead(msg, err)
            return
        delay = self.backoff[min(attempt - 1, len(self.backoff) - 1)]
        log.warning(
            "%s handler failed (delivery %d/%d, retry in %.1f s): %r",
            self.stage,
            attempt,
            self.spec.max_deliver,
            delay,
            err,
        )
        await msg.nak(delay=delay)
        self.counts["retried"] += 1

    async def _dead(self, msg, err: Exception) -> None:
        try:
            await dead_letter(self.js, self.run_id, self.stage, msg, err)
            self.counts["dead"] += 1
        except Exception as pub_err:  # noqa: BLE001 - keep the message rather than lose it
            log.error("dead-letter publish failed (%r); message stays on the queue", pub_err)
            await _quietly(msg.nak(delay=self.backoff[-1]))

    async def _on_exhausted(self, advisory) -> None:
        try:
            await dead_letter_exhausted(self.js, self.run_id, self.stage, advisory.data)
            self.counts["dead"] += 1
        except Exception as err:  # noqa: BLE001 - the message stays on the queue, visible in pending()
            log.error("could not dead-letter an exhausted %s message: %r", self.stage, err)

    async def _heartbeat(self, ctx: WorkContext) -> None:
        while True:
            await asyncio.sleep(max(self.spec.ack_wait / 3, 0.1))
            await _quietly(ctx.in_progress())


async def _quietly(coro) -> None:
    try:
        await coro
    except Exception:  # noqa: BLE001 - best effort on shutdown paths
        pass
