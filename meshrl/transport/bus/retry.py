"""Retry JetStream calls through transient failures (a server restarting, a leader election).

Transient: timeouts, no responders (JetStream not up yet), and API codes 408 / 429 / 503.
Anything else is a real error and is raised at once. Backoff doubles from `base_delay`
up to 2 s; with the defaults 8 attempts span ≈ 6 s.
"""
import asyncio
from typing import Awaitable, Callable, TypeVar

import nats.errors
import nats.js.errors

T = TypeVar("T")
RETRYABLE_CODES = {408, 429, 503}
TRANSIENT = (asyncio.TimeoutError, nats.errors.TimeoutError, nats.errors.NoRespondersError,
             nats.js.errors.NoStreamResponseError)


def is_transient(err: BaseException) -> bool:
    if isinstance(err, TRANSIENT):
        return True
    return isinstance(err, nats.js.errors.APIError) and err.code in RETRYABLE_CODES


async def retry_transient(call: Callable[[], Awaitable[T]], *, attempts: int = 8,
                          base_delay: float = 0.05) -> T:
    """Await `call()`; on a transient error wait and call again; re-raise the last one."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception as err:  # noqa: BLE001 - classified by is_transient
            if not is_transient(err) or attempt == attempts - 1:
                raise
        await asyncio.sleep(min(base_delay * 2**attempt, 2.0))
    raise AssertionError("unreachable")
