"""Live listening on an events subject (core NATS: from now on, no replay).

    acks = await bus.listen(names.weights_loaded_subject(run), common_pb2.WeightsLoaded)
    ... publish the weights notice ...
    loaded = await acks.next(timeout=30)
    await acks.close()

`listen` returns only after the server has registered the subscription (a flush), so an
event published after it returns is never missed. The events stream keeps a copy too. A
message that was not published to this subject (re-published here by the server as someone's
reply subject: origin.py) is logged and skipped.
"""

import asyncio
import logging

from google.protobuf.message import Message

from meshrl.transport.bus.origin import Misrouted, check_origin

log = logging.getLogger(__name__)


class Listener:
    def __init__(self, sub, cls: type[Message]):
        self._sub, self._cls = sub, cls

    @classmethod
    async def open(cls, nc, subject: str, message_cls: type[Message]) -> "Listener":
        sub = await nc.subscribe(subject)
        await nc.flush()
        return cls(sub, message_cls)

    async def next(self, timeout: float) -> Message:
        """The next message, or asyncio.TimeoutError after `timeout` seconds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            left = max(deadline - asyncio.get_running_loop().time(), 0.001)
            try:
                msg = await self._sub.next_msg(timeout=left)
            except Exception as err:  # nats raises its own TimeoutError subclass
                if isinstance(err, asyncio.TimeoutError):
                    raise asyncio.TimeoutError(f"no message on {self._sub.subject} within {timeout:g} s") from None
                raise
            if _published_to(self._sub.subject, msg):
                return self._cls.FromString(msg.data)

    def __aiter__(self):
        return self

    async def __anext__(self) -> Message:
        while True:
            msg = await self._sub.messages.__anext__()
            if _published_to(self._sub.subject, msg):
                return self._cls.FromString(msg.data)

    async def close(self) -> None:
        await self._sub.unsubscribe()


def _published_to(subject: str, msg) -> bool:
    try:
        check_origin(subject, msg.subject, msg.headers)
    except Misrouted as err:
        log.error("ignored: %s", err)
        return False
    return True
