"""The rollout NATS side on a real nats-server and a real vLLM engine: prompts → generated,
version gating, weights following through the run KV, two replicas sharing one queue.

Run: .venv/bin/python -m pytest tests/services/rollout/test_worker.py -m slow
"""

import asyncio
import contextlib
import hashlib

import pytest
from safetensors.torch import save_file

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.worker import IN_STAGE, OUT_STAGE, RolloutWorker
from meshrl.transport.bus import Bus
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights.follow import WeightsFollower
from meshrl.transport.weights.update import WeightsUpdater
from tests.fixtures.vllm import perturbed_weights, prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


@contextlib.asynccontextmanager
async def running(worker: RolloutWorker, **kw):
    task = asyncio.create_task(worker.run(**kw))
    try:
        yield worker
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def collect(bus, n: int, timeout: float = 60.0) -> list[pb.Group]:
    """Pull n groups from `generated` (acking them) or fail after `timeout` seconds."""
    groups, loop = [], asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(groups) < n and loop.time() < deadline:
        for delivery in await bus.pull(OUT_STAGE, "reward", max_msgs=n - len(groups), timeout=1.0):
            groups.append(delivery.message)
            await delivery.ack()
    return groups


def notice_for(path, version: int, run_id: str) -> pb.WeightsNotice:
    data = path.read_bytes()
    return pb.WeightsNotice(
        run_id=run_id,
        version=version,
        transport="shm",
        location=str(path),
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        format="safetensors",
    )


async def test_a_published_task_becomes_one_group_on_generated(bus, base_rollout_engine, run_id):
    engine = base_rollout_engine
    task = prompt_task(engine.tokenizer, group_id="g-worker", n=3, run_id=run_id)
    await bus.publish(IN_STAGE, task, msg_id=task.group_id)
    async with running(RolloutWorker(bus, engine)) as worker:
        (group,) = await collect(bus, 1)
        await asyncio.sleep(0.2)  # the ack follows the publish
        assert worker.consumer.counts["acked"] == 1
    assert (group.group_id, group.run_id, len(group.samples)) == ("g-worker", run_id, 3)
    assert group.policy_version == 0 and group.rollout_replica == "rollout-test"
    assert all(s.policy_version == 0 for s in group.samples)
    assert await bus.pending(IN_STAGE) == 0


async def test_a_task_for_a_newer_version_waits_for_it(bus, base_rollout_engine, run_id, tiny_model_dir, tmp_path):
    engine = base_rollout_engine
    task = prompt_task(engine.tokenizer, group_id="g-v1", n=2, run_id=run_id, min_policy_version=1)
    await bus.publish(IN_STAGE, task, msg_id=task.group_id)
    async with running(RolloutWorker(bus, engine, version_wait_s=60.0)):
        assert await collect(bus, 1, timeout=2.0) == []  # held back: the replica is on v0
        save_file(perturbed_weights(tiny_model_dir), str(tmp_path / "v1.safetensors"))
        await engine.load_weights(tmp_path / "v1.safetensors", version=1)
        (group,) = await collect(bus, 1)
    assert group.group_id == "g-v1" and group.policy_version == 1


async def test_a_task_the_replica_cannot_serve_is_handed_back_not_served(bus, base_rollout_engine, run_id):
    task = prompt_task(base_rollout_engine.tokenizer, group_id="g-v7", run_id=run_id, min_policy_version=7)
    await bus.publish(IN_STAGE, task, msg_id=task.group_id)
    async with running(RolloutWorker(bus, base_rollout_engine, version_wait_s=0.3)) as worker:
        await asyncio.sleep(2.0)
        assert worker.consumer.counts["retried"] >= 1 and worker.consumer.counts["acked"] == 0
    assert await collect(bus, 1, timeout=1.0) == []
    assert await bus.pending(IN_STAGE) == 1  # still queued for a replica that gets v7


async def test_two_replicas_share_the_queue_without_duplicates(bus, base_rollout_engine, nats_url, run_id):
    engine = base_rollout_engine
    tasks = [
        prompt_task(engine.tokenizer, f"p{i}", group_id=f"g-{i:02d}", n=2, max_tokens=6, run_id=run_id)
        for i in range(12)
    ]
    for task in tasks:
        await bus.publish(IN_STAGE, task, msg_id=task.group_id)
    await bus.publish(IN_STAGE, tasks[0], msg_id=tasks[0].group_id)  # a duplicate publish is dropped
    async with await Bus.connect(nats_url, run_id, name="replica-b") as other:
        a, b = RolloutWorker(bus, engine), RolloutWorker(other, engine)
        async with running(a, concurrency=2), running(b, concurrency=2):
            groups = await collect(bus, 12)
            extra = await collect(bus, 1, timeout=1.5)
    assert sorted(g.group_id for g in groups) == [t.group_id for t in tasks] and extra == []
    acked = (a.consumer.counts["acked"], b.consumer.counts["acked"])
    assert sum(acked) == 12 and min(acked) > 0, f"one replica took everything: {acked}"


async def test_follower_loads_the_current_version_then_refuses_a_bad_one(
    bus, base_rollout_engine, run_id, tiny_model_dir, tmp_path
):
    engine = base_rollout_engine
    path = tmp_path / "v1.safetensors"
    save_file(perturbed_weights(tiny_model_dir, seed=9), str(path))
    await bus.state.put(WEIGHTS_NOTICE_KEY, notice_for(path, 1, run_id))
    loaded = await bus.nc.subscribe(names.weights_loaded_subject(run_id))
    updater = WeightsUpdater(
        engine,
        run_id=run_id,
        replica_id="rollout-test",
        publish_loaded=lambda r: bus.publish_event(names.weights_loaded_subject(run_id), r),
    )
    follower = WeightsFollower(bus.state, updater)

    await follower.start()  # what a (re)starting replica does before taking work

    assert engine.version == 1 and follower.ready.is_set()
    first = pb.WeightsLoaded.FromString((await loaded.next_msg(timeout=5)).data)
    assert (first.version, first.ok, first.replica_id) == (1, True, "rollout-test")
    watch = asyncio.create_task(follower.run())
    try:
        bad = notice_for(path, 2, run_id)
        bad.sha256 = "f" * 64
        await bus.state.put(WEIGHTS_NOTICE_KEY, bad)
        second = pb.WeightsLoaded.FromString((await loaded.next_msg(timeout=10)).data)
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await loaded.unsubscribe()
    assert (second.version, second.ok) == (2, False) and "sha256" in second.error
    assert engine.version == 1 and not follower.ready.is_set()  # v2 exists but is not held
