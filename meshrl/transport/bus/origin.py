"""Which subject a message was published to, stamped by every meshrl publisher and checked by
every meshrl consumer, so a message the server re-published somewhere else is refused.

The server publishes on a client's behalf, without checking that client's permissions, in
one more way than a consumer's deliver_subject (subjects.py's run_consumers): the reply to a request goes to
whatever reply subject the requester named. A service may ask the JetStream API for the next
message of its own durable, or for anything at all, with the reply subject set to `ready`,
`weights.loaded` or another stage it may not publish to; the stream stores what arrives
there like any publish. What arrives keeps the subject and headers it was stored with (or
has none: a JSON API answer), so it does not say it was published where it arrived:

    headers = stamp(subject, headers)                   # publish.py, for every publish
    check_origin(subject, msg.subject, msg.headers)     # events.py; worker.py and pull.py by parse_delivery
"""

from __future__ import annotations

from google.protobuf.message import Message

from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.messages import BadPayload, parse

ORIGIN_HEADER = "Meshrl-Published-To"


class Misrouted(BadPayload):
    """A message on a subject it was not published to (or not by a meshrl publisher)."""


def stamp(subject: str, headers: dict[str, str]) -> dict[str, str]:
    """`headers` with the subject this message is being published to."""
    return {**headers, ORIGIN_HEADER: subject}


def check_origin(subject: str, msg_subject: str, headers: dict | None) -> None:
    """Raise Misrouted unless a message that arrived where `subject` is read was published
    to `subject`: its own subject and its stamp both name it."""
    origin = (headers or {}).get(ORIGIN_HEADER)
    if origin == msg_subject == subject:
        return
    if origin is None:
        raise Misrouted(
            f"a message on {subject} carries no {ORIGIN_HEADER} header: no meshrl service published it "
            "there (a JetStream API answer that someone aimed at this subject as its reply subject)"
        )
    raise Misrouted(
        f"a message on {subject} was published to {origin if origin != subject else msg_subject}: the "
        "server re-published it here (a pull request or direct get with this subject as its reply "
        "subject, by a user who may not publish here)"
    )


def parse_delivery(run_id: str, stage: str, msg) -> Message:
    """A delivered stage message's body; Misrouted (a BadPayload: dead-lettered like one)
    unless it was published to the stage's subject."""
    check_origin(names.stage_subject(run_id, stage), msg.subject, msg.headers)
    return parse(stage, msg.data)
