"""A cancel lost inside asyncio.wait_for (Python 3.11, bpo-42130) still stops a consumer loop.

Run: .venv/bin/python -m pytest tests/unit/transport/bus/test_cancel.py
"""

import asyncio

import pytest

from meshrl.transport.bus.cancel import raise_if_cancelled


class FakeMsg:
    """Stands in for a nats Msg: records the nak."""

    def __init__(self):
        self.naked = False

    async def nak(self):
        self.naked = True


async def fetch_that_can_swallow_a_cancel(arrived: asyncio.Future):
    """What nats-py's fetch does: wait for the next message through wait_for."""
    return await asyncio.wait_for(arrived, timeout=5)


async def test_a_cancel_arriving_with_the_message_is_raised_and_the_message_handed_back():
    loop = asyncio.get_running_loop()
    arrived, msg = loop.create_future(), FakeMsg()
    fetched_anyway = []

    async def consumer_loop():
        got = await fetch_that_can_swallow_a_cancel(arrived)
        fetched_anyway.append(got)  # on 3.11 wait_for returned instead of raising
        await raise_if_cancelled([got])
        return "kept running"

    task = asyncio.create_task(consumer_loop())
    await asyncio.sleep(0)  # the loop is now waiting for a message
    arrived.set_result(msg)
    task.cancel()  # in the same tick as the message: the race
    with pytest.raises(asyncio.CancelledError):
        await task
    if fetched_anyway:  # the swallow happened: the guard caught it and naked what it held
        assert msg.naked


async def test_no_cancel_no_raise_and_nothing_naked():
    msg = FakeMsg()
    await raise_if_cancelled([msg])
    assert not msg.naked
