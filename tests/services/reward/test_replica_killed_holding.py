"""A reward replica killed while it holds a group, on a real nats-server with two real reward
service processes: while the holder lives, its heartbeats keep the group (no second replica
scores it, though it holds it longer than the ack wait); once it is SIGKILLed, the group goes
to the other replica after `reward.ack_wait_s` (3 s here; a fixed 60 s before it was
configurable) and arrives scored on `ready`, once.

The external component is `HoldFirst`, a test reward service in this process: it holds its
first call until the test ends and answers every later one at once."""

import asyncio
import signal
import subprocess
import sys
import time

import pytest

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.transport.bus.registry import service_addresses
from meshrl.transport.rpc.server import registration, start_server
from tests.services.reward.test_external_calls import ScriptedService
from tests.services.reward.test_service_process import write_reward_config
from tests.services.reward.test_worker import make_group

ACK_WAIT_S = 3.0


class HoldFirst(ScriptedService):
    def __init__(self):
        super().__init__()
        self.holding, self.calls = asyncio.Event(), 0

    async def Score(self, request, context):
        self.calls += 1
        if not self.holding.is_set():
            self.holding.set()
            await asyncio.sleep(3600)  # until the caller dies or the server stops
        return await super().Score(request, context)


def write_config(tmp_path, address: str) -> str:
    judge = {"name": "judge", "kind": "external", "address": address, "timeout_s": 600}
    return write_reward_config(tmp_path, {"ack_wait_s": ACK_WAIT_S, "components": [judge]})


def start_replica(nats_url: str, run_id: str, config: str, replica: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "meshrl.services.reward", "--nats", nats_url, "--run-id", run_id]
    cmd += ["--config", config, "--replica-id", replica]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def until(condition, what: str, timeout_s: float = 90.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not await condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        await asyncio.sleep(0.2)


@pytest.mark.timeout(240)
async def test_a_killed_holders_group_goes_to_the_other_replica_after_the_ack_wait(bus, nats_url, run_id, tmp_path):
    judge = HoldFirst()  # served with health, as the replicas check it before they start
    service = reward_pb2.DESCRIPTOR.services_by_name["RewardService"]
    server, port = await start_server(
        [registration(reward_pb2_grpc.add_RewardServiceServicer_to_server, judge, service)]
    )
    address = f"127.0.0.1:{port}"
    config = write_config(tmp_path, address)
    holder = start_replica(nats_url, run_id, config, "reward-0")
    other = None
    try:
        await bus.publish("generated", make_group(run_id, "g1"), msg_id="g1")
        await asyncio.wait_for(judge.holding.wait(), 90)  # reward-0 took g1 and called the judge
        other = start_replica(nats_url, run_id, config, "reward-1")
        await until(lambda: _announced(bus, 2), "reward-1 announced beside reward-0")
        # Held past the ack wait, kept by reward-0's heartbeats: reward-1 did not get it.
        assert await bus.pull("ready", "learner", max_msgs=1, timeout=2 * ACK_WAIT_S) == []
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        killed = time.monotonic()
        got = await bus.pull("ready", "learner", max_msgs=1, timeout=40)
        moved_s = time.monotonic() - killed
    finally:
        for proc in (holder, other):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)
        await server.stop(0)
    assert [d.message.group_id for d in got] == ["g1"], "the held group never came back"
    await got[0].ack()
    assert got[0].message.timings[-1].service == "reward-1"
    assert (judge.calls, judge.sizes) == (2, [3])  # reward-0's held call, then reward-1's answered one
    # Redelivered after the 3 s ack wait (the old fixed 60 s would miss the 40 s pull)
    assert moved_s < 30, f"the group moved {moved_s:.1f} s after the kill"


async def _announced(bus, n: int) -> bool:
    return len(await service_addresses(bus.state, "reward")) >= n
