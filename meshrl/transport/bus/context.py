"""What a handler (worker) or the learner (pull) sees of one delivered message."""

from dataclasses import dataclass

from google.protobuf.message import Message
from nats.aio.msg import Msg
from nats.js import api


@dataclass
class Delivery:
    """One delivery of a work-queue message: the parsed body plus the raw NATS message.

    `in_progress()` resets the server's ack_wait timer; call it during long work.
    """

    message: Message
    raw: Msg

    @property
    def headers(self) -> dict[str, str]:
        return dict(self.raw.headers or {})

    @property
    def msg_id(self) -> str | None:
        return (self.raw.headers or {}).get(api.Header.MSG_ID)

    @property
    def num_delivered(self) -> int:
        return self.raw.metadata.num_delivered

    @property
    def subject(self) -> str:
        return self.raw.subject

    async def in_progress(self) -> None:
        await self.raw.in_progress()

    async def ack(self) -> None:
        await self.raw.ack()

    async def nak(self, delay: float | None = None) -> None:
        await self.raw.nak(delay=delay)

    async def term(self) -> None:
        await self.raw.term()


# A worker's handler receives (message, ctx) where ctx is the Delivery; the name reads better.
WorkContext = Delivery
