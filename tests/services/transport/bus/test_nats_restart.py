"""A nats-server restart loses nothing: stored messages survive, connected workers resume."""

import asyncio

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import Bus, EmbeddedNats

pytestmark = pytest.mark.timeout(60)


async def wait_until(predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def restart(server: EmbeddedNats, tmp_path, port: int) -> EmbeddedNats:
    server.close()
    return EmbeddedNats(tmp_path / "js", port=port)


async def reconnected(bus: Bus, times: int) -> None:
    """A request sent while the client is still reconnecting waits out its whole timeout
    (5 s) before the retry succeeds; waiting here keeps the test fast and still real."""
    await wait_until(lambda: bus.nc.stats["reconnects"] >= times and bus.nc.is_connected)


async def test_queue_survives_a_server_restart_and_workers_reconnect(tmp_path):
    server = EmbeddedNats(tmp_path / "js")
    port = server.port
    bus = await Bus.connect(server.url, "restart", name="t")
    await bus.ensure_streams()
    await bus.publish("prompts", common_pb2.PromptTask(group_id="stored"), msg_id="stored")
    server = restart(server, tmp_path, port)  # same data dir: the stream is on disk
    await reconnected(bus, 1)
    got = []

    async def handle(msg, ctx):
        got.append(msg.group_id)

    worker = asyncio.create_task(bus.worker("prompts", "rollout", handle, ack_wait=2))
    await wait_until(lambda: got == ["stored"])
    server = restart(server, tmp_path, port)  # the worker rides through this one
    await reconnected(bus, 2)
    await bus.publish("prompts", common_pb2.PromptTask(group_id="after"), msg_id="after")
    await wait_until(lambda: got == ["stored", "after"])
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    await bus.close()
    server.close()
