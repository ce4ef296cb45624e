"""Retry JetStream calls through transient failures (a server restarting, a leader election).

Transient: timeouts, no responders (JetStream not up yet), and API codes 408 / 429 / 503
(a pull's fetch reports 503 as a status header with no API code: ServiceUnavailableError).
Anything else is a real error and is raised at once. Backoff doubles from `base_delay`
up to 2 s; with the defaults 8 attempts span ≈ 6 s. `patience_s` keeps retrying past the
attempts until that much time has passed: in a cluster, losing a stream's leader answers
"no responders" in microseconds for the seconds a new election takes, which a count of
attempts alone would spend at once. ELECTION_PATIENCE_S covers one with room to spare
(docs/benchmarks.md, "Recovery on the real mesh").
Only a connection that knows more than one server waits that long (`election_patience`): on a
single server "no responders" means a missing stream or bucket, and 30 s per call would only
hide that error (and slow every clean-up that meets it).
"""

import asyncio
import time
from typing import Awaitable, Callable, TypeVar

import nats.errors
import nats.js.errors

T = TypeVar("T")
RETRYABLE_CODES = {408, 429, 503}
ELECTION_PATIENCE_S = 30.0
TRANSIENT = (
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.js.errors.NoStreamResponseError,
    nats.js.errors.ServiceUnavailableError,
)


def election_patience(nc) -> float:
    """ELECTION_PATIENCE_S for a client of a cluster (its pool holds several servers, given or
    discovered), else 0: a lone server elects no leaders."""
    return ELECTION_PATIENCE_S if len(getattr(nc, "servers", ()) or ()) > 1 else 0.0


def is_transient(err: BaseException) -> bool:
    if isinstance(err, TRANSIENT):
        return True
    # getattr: nats-py raises some APIError subclasses (KeyNotFoundError) without a code
    return isinstance(err, nats.js.errors.APIError) and getattr(err, "code", None) in RETRYABLE_CODES


async def retry_transient(
    call: Callable[[], Awaitable[T]], *, attempts: int = 8, base_delay: float = 0.05, patience_s: float = 0.0
) -> T:
    """Await `call()`; on a transient error wait and call again, at least `attempts` times and
    for at least `patience_s` seconds; then re-raise the last error."""
    started = time.monotonic()
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as err:  # noqa: BLE001 - classified by is_transient
            spent = attempt >= attempts - 1 and time.monotonic() - started >= patience_s
            if not is_transient(err) or spent:
                raise
        await asyncio.sleep(min(base_delay * 2**attempt, 2.0))
        attempt += 1
