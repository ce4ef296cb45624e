"""A JetStream publish that is awaited, bounded and retried.

Why not `publish_async` + `publish_async_completed()`: in nats-py 2.16 a 429 reply makes
`publish_async_completed()` wait forever. Each publish here waits for its PubAck with a
timeout; timeouts, 429 (too many requests) and 503 (no JetStream leader yet) are retried
with exponential backoff. `Nats-Msg-Id` makes a retried publish safe: the stream keeps one
copy per id inside its duplicate window.
"""
import asyncio

import nats.errors
import nats.js.errors
from nats.js import api

from meshrl.bus.errors import PublishFailed

RETRYABLE_CODES = {408, 429, 503}


def _retryable(err: Exception) -> bool:
    if isinstance(err, (asyncio.TimeoutError, nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError)):
        return True
    return isinstance(err, nats.js.errors.APIError) and err.code in RETRYABLE_CODES


async def publish_with_retry(js, subject: str, payload: bytes, *, msg_id: str | None = None,
                             headers: dict | None = None, timeout: float = 5.0,
                             attempts: int = 6, base_delay: float = 0.05) -> api.PubAck:
    """Publish and wait for the PubAck; `ack.duplicate` is True for a deduplicated copy."""
    hdrs = {str(k): str(v) for k, v in (headers or {}).items()}
    if msg_id:
        hdrs[api.Header.MSG_ID] = msg_id
    last: Exception | None = None
    for attempt in range(attempts):
        try:
            return await js.publish(subject, payload, timeout=timeout, headers=hdrs or None)
        except Exception as err:  # noqa: BLE001 - classified just below
            if not _retryable(err):
                raise
            last = err
        await asyncio.sleep(min(base_delay * 2**attempt, 2.0))
    hint = " (no stream listens on it: call Bus.ensure_streams() first)" if isinstance(
        last, nats.js.errors.NoStreamResponseError) else ""
    raise PublishFailed(f"publish to {subject!r} not acknowledged after {attempts} attempts{hint}: {last!r}")
