"""The call path to one external reward service: batching, concurrency, retries, breaker,
cache, metrics and a span per call. `ExternalComponent` (external.py) maps items to and from
the protocol; this file decides when and how often a `Score` call is made.

    calls = ExternalCalls(cfg, who="external reward 'judge' at judge:50051")
    scores = await calls.score(items, score_batch)   # score_batch(items) makes one Score call

- **Batching**: items are sent `batch_size` per call; the batches of one group go out
  concurrently, at most `max_concurrency` calls in flight per service (all groups of this
  replica share the limit).
- **Retries** (tenacity): up to `retry.attempts` attempts per call with full-jitter
  exponential back-off (`initial_backoff_s` … `max_backoff_s`), only on codes that say
  "try again": UNAVAILABLE (not reachable, restarting), RESOURCE_EXHAUSTED (overloaded) and
  DEADLINE_EXCEEDED. Retrying a deadline is safe because scoring is idempotent by item id:
  a service that did finish the first attempt just scores the same ids again, and only one
  answer is kept. Every other code (INVALID_ARGUMENT, UNAUTHENTICATED, INTERNAL, ...) fails
  at once. Each attempt has its own deadline `timeout_s`; a call takes at most
  attempts × timeout_s plus the back-off.
- **Circuit breaker** (meshrl.transport.rpc.breaker): a call that still fails after its
  retries counts as one failure; after `breaker.failures` in a row the service is not
  called for `breaker.cooldown_s` (items fail at once as ERROR "circuit breaker ... open"),
  then one probe goes out on a freshly opened channel; its success closes the breaker.
  With FAST_RECONNECT (tls.py) on the channel too, a service that comes back is scored
  within about a second of the cool-down ending.
- **Cache** (`cache_size` > 0): OK scores by (prompt, response, ground truth).
- **Telemetry**: CallMetrics (call_metrics.py); a span `reward.external <component>` with
  the service address around each call (the gRPC client span nests under it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Callable

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_random_exponential

from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.call_metrics import CallMetrics
from meshrl.services.reward.score_cache import ScoreCache
from meshrl.services.reward.types import ItemScore, RewardItem
from meshrl.telemetry.tracing import current_tracer
from meshrl.transport.rpc.breaker import BreakerOpen, CircuitBreaker
from meshrl.transport.rpc.mesh_tls import channel_credentials
from meshrl.transport.rpc.tls import open_external_channel, read_token

RETRYABLE = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED}
)
ScoreBatch = Callable[[list[RewardItem]], Awaitable[list[ItemScore]]]


def retryable(err: BaseException) -> bool:
    return isinstance(err, grpc.aio.AioRpcError) and err.code() in RETRYABLE


class ExternalCalls:
    def __init__(self, cfg: RewardComponentConfig, who: str, metrics: CallMetrics | None = None):
        self.cfg, self.who = cfg, who
        self.metrics = metrics or CallMetrics()
        self.limit = asyncio.Semaphore(cfg.max_concurrency)
        self.breaker = CircuitBreaker(
            cfg.breaker.failures, cfg.breaker.cooldown_s, name=who, on_half_open=self.drop_channel
        )
        self.cache = ScoreCache(cfg.cache_size) if cfg.cache_size else None
        self.channel: grpc.aio.Channel | None = None
        self.closing: set[asyncio.Task] = set()  # old channels, closed once their calls end

    def use_metrics(self, metrics: CallMetrics) -> None:
        self.metrics = metrics
        metrics.watch_breaker(lambda: int(self.breaker.state))

    # -- the channel -------------------------------------------------------------------
    def open(self) -> grpc.aio.Channel:
        """The channel, opened on first use (TLS files and the token are read then)."""
        if self.channel is None:
            tls = self.cfg.tls
            creds = channel_credentials(tls.ca_file, tls.cert_file, tls.key_file, who=self.who) if tls else None
            token = read_token(self.cfg.token_env, self.cfg.token_file, who=self.who)
            self.channel = open_external_channel(
                self.cfg.address, credentials=creds, token=token, server_name=tls.server_name if tls else None
            )
        return self.channel

    def drop_channel(self) -> None:
        """Half-open: the probe gets a new channel (no reconnect back-off left over). The old
        one closes in the background, once calls still on it end (at most their deadline)."""
        if self.channel is not None:
            task = asyncio.ensure_future(self.channel.close(grace=self.cfg.timeout_s))
            self.closing.add(task)
            task.add_done_callback(self.closing.discard)
            self.channel = None

    async def close(self) -> None:
        if self.channel is not None:
            await self.channel.close()
            self.channel = None
        await asyncio.gather(*self.closing, return_exceptions=True)

    async def health(self, timeout: float) -> str:
        """One grpc.health.v1 Check over this channel (TLS and token included)."""
        stub = health_pb2_grpc.HealthStub(self.open())
        try:
            reply = await stub.Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        except grpc.aio.AioRpcError as err:
            return f"{err.code().name}: {err.details()}"
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    # -- one call ------------------------------------------------------------------------
    async def call(self, rpc: Callable[[grpc.aio.Channel, float], Awaitable]):
        """`rpc(channel, timeout)` with the breaker, the concurrency limit, retries, metrics
        and a span. Raises BreakerOpen, or the last AioRpcError."""
        try:
            self.breaker.check()
        except BreakerOpen:
            self.metrics.error("BREAKER_OPEN")
            raise
        try:
            async with self.limit:
                with current_tracer().otel.start_as_current_span(
                    f"reward.external {self.cfg.name}",
                    attributes={"meshrl.reward.component": self.cfg.name, "server.address": self.cfg.address},
                ):
                    result = await self.with_retries(rpc)
        except grpc.aio.AioRpcError as err:
            self.breaker.record(ok=False)
            self.metrics.error(err.code().name)
            raise
        self.breaker.record(ok=True)
        return result

    async def with_retries(self, rpc):
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.cfg.retry.attempts),
            reraise=True,
            retry=retry_if_exception(retryable),
            wait=wait_random_exponential(multiplier=self.cfg.retry.initial_backoff_s, max=self.cfg.retry.max_backoff_s),
            before_sleep=lambda state: self.metrics.retry(state.outcome.exception().code().name),
        )
        async for attempt in retrying:
            with attempt:
                t0 = time.perf_counter()
                try:
                    return await rpc(self.open(), self.cfg.timeout_s)
                finally:
                    self.metrics.call(time.perf_counter() - t0)

    # -- a whole list of items -------------------------------------------------------------
    async def score(self, items: list[RewardItem], score_batch: ScoreBatch) -> list[ItemScore]:
        """Cached items answered from the cache; the rest in batches of batch_size, concurrently."""
        cached = [self.cache.get(it) if self.cache else None for it in items]
        todo = [it for it, hit in zip(items, cached) if hit is None]
        size = self.cfg.batch_size
        batches = await asyncio.gather(*(score_batch(todo[i : i + size]) for i in range(0, len(todo), size)))
        fresh = iter([s for batch in batches for s in batch])
        out = [hit if hit is not None else next(fresh) for hit in cached]
        if self.cache:
            for it, hit, score in zip(items, cached, out):
                if hit is None:
                    self.cache.put(it, score)
        return out
