"""Dead letters: a message that failed `max_deliver` times (or cannot be parsed) is copied
to `meshrl.<run>.dead` with the error in headers, then terminated on its work queue.

Headers on the dead copy: Meshrl-Error (type: text, one line, ≤1000 chars), Meshrl-Stage,
Meshrl-Subject, Meshrl-Deliveries, plus the original headers (Nats-Msg-Id is replaced by a
`dead.<stage>.<id>` id so one poison message is dead-lettered once).
"""
import logging

from nats.aio.msg import Msg
from nats.js import api

from meshrl.bus import subjects as names
from meshrl.bus.publish import publish_with_retry

log = logging.getLogger(__name__)
ERROR_HEADER = "Meshrl-Error"
MAX_ERROR_CHARS = 1000


def error_text(err: BaseException) -> str:
    """`Type: message` on one line (NATS headers cannot hold newlines)."""
    text = f"{type(err).__name__}: {err}"
    return " ".join(text.split())[:MAX_ERROR_CHARS]


def dead_headers(msg: Msg, stage: str, err: BaseException) -> dict[str, str]:
    headers = {k: v for k, v in (msg.headers or {}).items() if k != api.Header.MSG_ID}
    headers.update({
        ERROR_HEADER: error_text(err),
        "Meshrl-Stage": stage,
        "Meshrl-Subject": msg.subject,
        "Meshrl-Deliveries": str(msg.metadata.num_delivered),
    })
    return headers


def original_id(msg: Msg) -> str:
    return (msg.headers or {}).get(api.Header.MSG_ID) or f"seq{msg.metadata.sequence.stream}"


async def dead_letter(js, run_id: str, stage: str, msg: Msg, err: BaseException) -> None:
    """Publish the dead copy, then term the original (removes it from the work queue)."""
    log.error("dead-lettering %s message %s after %d deliveries: %s",
              stage, original_id(msg), msg.metadata.num_delivered, error_text(err))
    await publish_with_retry(js, names.dead_subject(run_id), msg.data,
                             msg_id=f"dead.{stage}.{original_id(msg)}",
                             headers=dead_headers(msg, stage, err))
    await msg.term()
