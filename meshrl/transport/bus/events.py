"""Live listening on an events subject (core NATS: from now on, no replay).

    acks = await bus.listen(names.weights_loaded_subject(run), common_pb2.WeightsLoaded)
    ... publish the weights notice ...
    loaded = await acks.next(timeout=30)
    await acks.close()

`listen` returns only after the server has registered the subscription (a flush), so an
event published after it returns is never missed. The events stream keeps a copy too.
"""
import asyncio

from google.protobuf.message import Message


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
        try:
            msg = await self._sub.next_msg(timeout=timeout)
        except Exception as err:  # nats raises its own TimeoutError subclass
            if isinstance(err, asyncio.TimeoutError):
                raise asyncio.TimeoutError(f"no message on {self._sub.subject} within {timeout:g} s") from None
            raise
        return self._cls.FromString(msg.data)

    def __aiter__(self):
        return self

    async def __anext__(self) -> Message:
        msg = await self._sub.messages.__anext__()
        return self._cls.FromString(msg.data)

    async def close(self) -> None:
        await self._sub.unsubscribe()
