"""A JetStream publish that is awaited, bounded and retried.

Why not `publish_async` + `publish_async_completed()`: in nats-py 2.16 a 429 reply makes
`publish_async_completed()` wait forever. Each publish here waits for its PubAck with a
timeout; transient failures (timeouts, 429, 503, no stream yet: see meshrl.transport.bus.retry) are
retried with exponential backoff, for at least `patience_s` (a cluster's leader election).
`Nats-Msg-Id` makes a retried publish safe: the stream keeps one copy per id inside its
duplicate window. A message over the server's max_payload is refused before it is sent
(MessageTooLarge, see meshrl.transport.bus.payload_limit), never retried.
"""

import nats.js.errors
from nats.js import api

from meshrl.transport.bus.errors import PublishFailed
from meshrl.transport.bus.origin import stamp
from meshrl.transport.bus.payload_limit import check_payload_size
from meshrl.transport.bus.retry import election_patience, is_transient, retry_transient


async def publish_with_retry(
    js,
    subject: str,
    payload: bytes,
    *,
    msg_id: str | None = None,
    headers: dict | None = None,
    timeout: float = 5.0,
    attempts: int = 6,
    patience_s: float | None = None,
) -> api.PubAck:
    """Publish and wait for the PubAck; `ack.duplicate` is True for a deduplicated copy.
    `patience_s` None: a cluster's election patience when connected to one, else none."""
    if patience_s is None:
        patience_s = election_patience(js._nc)
    hdrs = publish_headers(subject, headers, msg_id)
    check_payload_size(js._nc, subject, payload, hdrs)  # MessageTooLarge: size, limit and the fix
    try:
        return await retry_transient(
            lambda: js.publish(subject, payload, timeout=timeout, headers=hdrs),
            attempts=attempts,
            patience_s=patience_s,
        )
    except Exception as err:
        if not is_transient(err):
            raise
        raise gave_up(subject, attempts, patience_s, err) from err


def publish_headers(subject: str, headers: dict | None, msg_id: str | None) -> dict[str, str]:
    """The caller's headers as strings, stamped with their origin (consumers check it: origin.py),
    and the message id the stream deduplicates a retried publish by."""
    hdrs = stamp(subject, {str(k): str(v) for k, v in (headers or {}).items()})
    if msg_id:
        hdrs[api.Header.MSG_ID] = msg_id
    return hdrs


def gave_up(subject: str, attempts: int, patience_s: float, err: Exception) -> PublishFailed:
    """The error once every retry of a transient failure is spent, with the likely fix."""
    hint = (
        " (no stream listens on it: call Bus.ensure_streams() first)"
        if isinstance(err, nats.js.errors.NoStreamResponseError)
        else ""
    )
    return PublishFailed(
        f"publish to {subject!r} not acknowledged after {attempts} attempts and {patience_s:g} s{hint}: {err!r}"
    )
