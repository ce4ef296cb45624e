"""A message over the NATS server's `max_payload`, refused before it is sent, with the fix.

The server announces its limit in INFO (`nc.max_payload`; the embedded server sets 8 MB,
meshrl.transport.bus.server.MAX_PAYLOAD; a stock nats-server 1 MB). The server counts the
headers too, while nats-py checks only the body: a message with headers that is just over
the limit passes nats-py, the server answers `Maximum Payload Violation` and closes the
connection, and the publish times out (retried, then "not acknowledged", naming nothing).
Too big by the body alone, nats-py raises `MaxPayloadError` ("maximum payload exceeded"),
naming neither the size nor the limit.

`check_payload_size` raises MessageTooLarge first, with the size, the limit, the subject and
what to change. Nothing is lost by it: in a pipeline worker the handler raises, so the task
it holds is nak'ed, retried (sampling again may give a shorter group) and after
`max_deliver` attempts dead-lettered with this message as its reason (`meshrl status` shows
it); it is never acked as done.
"""

from __future__ import annotations

from meshrl.transport.bus.errors import BusError

HEADER_LINE = b"NATS/1.0\r\n"


class MessageTooLarge(BusError):
    """A message (body + headers) is over the server's max_payload."""


def _text(value) -> str:
    """A header key or value as nats-py sends it (api.Header.MSG_ID is 'Nats-Msg-Id')."""
    return str.strip(value) if isinstance(value, str) else str(value).strip()


def header_bytes(headers: dict | None) -> int:
    """What the headers add on the wire, as nats-py encodes them (0 without headers)."""
    if not headers:
        return 0
    lines = sum(len(_text(k).encode()) + 2 + len(_text(v).encode()) + 2 for k, v in headers.items())
    return len(HEADER_LINE) + lines + 2


ADVICE = (
    "a group is one message: make groups smaller with fewer samples per group "
    "(rollout.sampling.group_size) or shorter sequences (rollout.sampling.max_tokens, "
    "data.max_prompt_tokens)"
)


def check_payload_size(nc, subject: str, payload: bytes, headers: dict | None) -> None:
    """Raise MessageTooLarge when body + headers exceed the connected server's max_payload."""
    limit = getattr(nc, "max_payload", 0)
    size = len(payload) + header_bytes(headers)
    if not isinstance(limit, int) or limit <= 0 or size <= limit:  # not connected yet: nats-py checks
        return
    raise MessageTooLarge(
        f"a message of {size:,} bytes for {subject!r} is over the NATS server's max_payload of "
        f"{limit:,} bytes ({size / limit:.1f}× the limit); {ADVICE}, or raise "
        f"max_payload in the nats-server config (the embedded server: MAX_PAYLOAD in "
        f"meshrl/transport/bus/server.py; NATS allows up to 64 MB)"
    )
