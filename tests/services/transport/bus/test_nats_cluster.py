"""A three-node NATS cluster (replicas 3) loses one node mid-run: the run pauses, then goes on.

The node killed (SIGKILL) is the one both clients are connected to and the one leading
the `prompts` and `generated` streams, the worker's consumer and the run-state KV: the
worst single loss. Every prompt must come out on `generated` exactly once (group id as
message id: a redelivery is deduplicated), none may be lost, and the KV must still read
and write. Run: .venv/bin/python -m pytest tests/services/transport/bus/test_nats_cluster.py -s
(-s prints the measured pause; timings are reported, never asserted).
"""

import asyncio
import json
import time
from collections import Counter

import nats.errors
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import Bus, BusError, EmbeddedNats
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.cluster import NatsCluster

pytestmark = pytest.mark.timeout(180)
RUN = "cluster"
GROUPS = 200
KILL_AFTER = 60  # handled groups before the node dies: mid-run for the worker and the publisher
PUBLISH_GAP_S = 0.01


async def wait_until(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, f"{what} not reached within {timeout:.0f} s"
        await asyncio.sleep(0.05)


async def connect_on(cluster: NatsCluster, node: str | None, name: str) -> Bus:
    """A Bus given every node's URL that happens to sit on `node` (the client picks at random)."""
    for _ in range(40):
        bus = await Bus.connect(cluster.url, RUN, name=name, replicas=3)
        if node is None or cluster.node_of(bus.nc.connected_url) == node:
            return bus
        await bus.close()
    raise AssertionError(f"no connection landed on {node} in 40 tries")


async def move_leader(bus: Bus, stepdown_subject: str, leader_of, node: str) -> None:
    """Ask the current leader to step down in favour of `node` until `node` leads."""
    for _ in range(10):
        current = await leader_of()
        if current == node:
            return
        await bus.nc.request(stepdown_subject, json.dumps({"placement": {"preferred": node}}).encode(), timeout=5)

        async def changed(before=current):
            return (await leader_of()) not in (before, None)

        await wait_until(changed, 10, f"a new leader after {stepdown_subject}")
    raise AssertionError(f"{node} never became leader for {stepdown_subject}")


async def leader_or_none(info) -> str | None:
    """The leader `info` reports; None while it is being elected (the request times out)."""
    try:
        return (await info).cluster.leader
    except (nats.errors.Error, asyncio.TimeoutError):
        return None


async def gather_leadership_on(bus: Bus, node: str) -> None:
    """Streams `prompts`, `generated`, the KV's, and the worker's consumer all led by `node`."""

    async def stream_leader(stream):
        return await leader_or_none(bus.js.stream_info(stream))

    for stream in (
        names.stage_stream(RUN, "prompts"),
        names.stage_stream(RUN, "generated"),
        f"KV_{names.kv_bucket(RUN)}",
    ):
        await move_leader(bus, f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", lambda s=stream: stream_leader(s), node)
    prompts = names.stage_stream(RUN, "prompts")

    async def consumer_leader():
        return await leader_or_none(bus.js.consumer_info(prompts, "rollout", timeout=1.0))

    await move_leader(bus, f"$JS.API.CONSUMER.LEADER.STEPDOWN.{prompts}.rollout", consumer_leader, node)


async def publish_prompts(bus: Bus, acked_at: list[float]) -> None:
    for i in range(GROUPS):
        await bus.publish("prompts", common_pb2.PromptTask(group_id=f"g{i}"), msg_id=f"g{i}")
        acked_at.append(time.monotonic())
        await asyncio.sleep(PUBLISH_GAP_S)


async def drain_generated(bus: Bus) -> Counter:
    """Every group id on `generated`, counted (a work queue: each is read once, then acked)."""
    seen: Counter = Counter()
    deadline = time.monotonic() + 60
    while sum(seen.values()) < GROUPS and time.monotonic() < deadline:
        for delivery in await bus.pull("generated", "reward", max_msgs=100, timeout=1.0):
            seen[delivery.message.group_id] += 1
            await delivery.ack()
    for delivery in await bus.pull("generated", "reward", max_msgs=100, timeout=1.0):  # nothing may be left
        seen[delivery.message.group_id] += 1
    return seen


def longest_stall(times: list[float], moment: float) -> float:
    """The longest wait between events from the last one before `moment` on (how long work stood still)."""
    before = [t for t in times if t <= moment]
    around = before[-1:] + [t for t in times if t > moment]
    return max((b - a for a, b in zip(around, around[1:])), default=float("inf"))


async def test_run_survives_losing_the_node_its_clients_and_leaders_are_on(tmp_path):
    with NatsCluster(tmp_path / "nats", size=3) as cluster:
        admin = await connect_on(cluster, None, "admin")
        await admin.ensure_streams()
        worker_bus = await connect_on(cluster, None, "rollout")
        victim = cluster.node_of(worker_bus.nc.connected_url)
        publisher = await connect_on(cluster, victim, "learner")
        await worker_bus.state.put("weights_version", {"version": 1})
        handled, done_at, published_at = [], [], []

        async def handle(prompt, ctx):
            group = common_pb2.Group(group_id=prompt.group_id)
            await worker_bus.publish("generated", group, msg_id=prompt.group_id)
            handled.append(prompt.group_id)
            done_at.append(time.monotonic())

        worker = worker_bus.make_worker("prompts", "rollout", handle, batch=8, ack_wait=5.0, max_deliver=20)
        working = asyncio.create_task(worker.run())

        async def consumer_exists():
            return "rollout" in [c.name for c in await admin.js.consumers_info(names.stage_stream(RUN, "prompts"))]

        await wait_until(consumer_exists, what="the worker's durable consumer")
        await gather_leadership_on(admin, victim)
        publishing = asyncio.create_task(publish_prompts(publisher, published_at))

        async def mid_run():
            return len(handled) >= KILL_AFTER

        await wait_until(mid_run, what=f"{KILL_AFTER} groups handled")
        killed_at = time.monotonic()
        cluster.kill(victim)
        await publisher.state.put("heartbeat/rollout", {"at": killed_at})  # during the election
        kv_pause = time.monotonic() - killed_at
        await asyncio.wait_for(publishing, 120)  # publishes through the loss: none fails
        assert len(published_at) == GROUPS

        generated = await drain_generated(admin)
        assert generated == Counter({f"g{i}": 1 for i in range(GROUPS)})  # none lost, none twice
        assert set(handled) == set(generated)
        assert worker.counts["dead"] == 0

        async def prompts_all_acked():
            return await admin.pending("prompts") == 0

        await wait_until(prompts_all_acked, what="every prompt acked")
        assert (await publisher.state.get("weights_version")).json() == {"version": 1}
        assert (await worker_bus.state.get("heartbeat/rollout")).json() == {"at": killed_at}
        revision = await publisher.state.put("weights_version", {"version": 2})
        await publisher.state.cas("weights_version", {"version": 3}, revision)
        assert (await worker_bus.state.get("weights_version")).json() == {"version": 3}
        assert cluster.node_of(publisher.nc.connected_url) != victim

        print(
            f"\nkilled {victim} (clients' node, leader of prompts/generated/KV/consumer) after "
            f"{KILL_AFTER} groups: worker paused {longest_stall(done_at, killed_at):.2f} s, publisher paused "
            f"{longest_stall(published_at, killed_at):.2f} s, a KV put {kv_pause:.2f} s; handler calls {len(handled)} for {GROUPS} groups "
            f"({len(handled) - GROUPS} redeliveries deduplicated)"
        )
        working.cancel()
        await asyncio.gather(working, return_exceptions=True)
        for bus in (publisher, worker_bus, admin):
            await bus.close()


async def test_more_replicas_than_servers_is_refused_with_a_clear_error(tmp_path):
    with EmbeddedNats(tmp_path / "js") as server:
        bus = await Bus.connect(server.url, "single", name="t", replicas=3)
        try:
            with pytest.raises(BusError, match=r"replicas=3.*non-clustered.*use replicas=1 on a single server"):
                await bus.ensure_streams()
        finally:
            await bus.close()
