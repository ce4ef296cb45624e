"""Dead letters: a message that cannot be processed is copied to `meshrl.<run>.dead` with
the error in headers and removed from its work queue. Two ways in:

- its handler raised on the `max_deliver`-th delivery, or its body does not parse
  (`dead_letter`: publish the copy, then term the delivery);
- every delivery timed out (the handler hung, or its process died each time): the server
  stops redelivering and sends a MAX_DELIVERIES advisory; `dead_letter_exhausted` reads
  the message by stream sequence, publishes the copy and deletes it from the queue.

Headers on the copy: Meshrl-Error (`Type: text`, one line, ≤1000 chars), Meshrl-Stage,
Meshrl-Subject, Meshrl-Deliveries, plus the original headers; its Nats-Msg-Id is
`dead.<stage>.<original id>` so one message is dead-lettered once.
"""

import json
import logging

from nats.aio.msg import Msg
from nats.js import api
from nats.js.errors import NotFoundError

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.publish import publish_with_retry

log = logging.getLogger(__name__)
ERROR_HEADER = "Meshrl-Error"
MAX_ERROR_CHARS = 1000


def error_text(err: BaseException | str) -> str:
    """`Type: message` on one line (NATS headers cannot hold newlines)."""
    text = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
    return " ".join(text.split())[:MAX_ERROR_CHARS]


def max_deliveries_advisory(run_id: str, stage: str, durable: str) -> str:
    return f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{names.stage_stream(run_id, stage)}.{durable}"


async def _publish_dead(
    js,
    run_id: str,
    stage: str,
    data: bytes,
    headers: dict | None,
    subject: str,
    deliveries: int,
    seq: int,
    err: BaseException | str,
) -> None:
    original = dict(headers or {})
    msg_id = original.pop(api.Header.MSG_ID, None) or f"seq{seq}"
    original.update(
        {
            ERROR_HEADER: error_text(err),
            "Meshrl-Stage": stage,
            "Meshrl-Subject": subject,
            "Meshrl-Deliveries": str(deliveries),
        }
    )
    log.error("dead-lettering %s message %s after %d deliveries: %s", stage, msg_id, deliveries, error_text(err))
    await publish_with_retry(
        js, names.dead_subject(run_id), data or b"", msg_id=f"dead.{stage}.{msg_id}", headers=original
    )


async def dead_letter(js, run_id: str, stage: str, msg: Msg, err: BaseException) -> None:
    """Publish the dead copy of a delivery, then term it (removes it from the work queue)."""
    meta = msg.metadata
    await _publish_dead(
        js, run_id, stage, msg.data, msg.headers, msg.subject, meta.num_delivered, meta.sequence.stream, err
    )
    await msg.term()


async def dead_letter_exhausted(js, run_id: str, stage: str, advisory: bytes) -> None:
    """Handle a MAX_DELIVERIES advisory: dead-letter the stored message, delete it."""
    info = json.loads(advisory)
    stream, seq, deliveries = info["stream"], int(info["stream_seq"]), int(info.get("deliveries", 0))
    try:
        raw = await js.get_msg(stream, seq)
    except NotFoundError:
        return  # already acked, or another replica dealt with it
    reason = (
        f"DeliveriesExhausted: no ack within ack_wait on any of {deliveries} deliveries "
        "(the handler hung or its process died each time)"
    )
    await _publish_dead(js, run_id, stage, raw.data, raw.headers, raw.subject, deliveries, seq, reason)
    try:
        await js.delete_msg(stream, seq)
    except NotFoundError:
        pass
