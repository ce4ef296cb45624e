"""Work queues on a real nats-server: ack, retry, dead letters, dedup, sharing, restart."""

import asyncio

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import Bus, BusError
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.origin import ORIGIN_HEADER

pytestmark = pytest.mark.timeout(60)


def task(i: int) -> common_pb2.PromptTask:
    return common_pb2.PromptTask(group_id=f"g{i}", prompt_text=f"What is {i}+1?")


async def publish_tasks(bus: Bus, n: int) -> None:
    for i in range(n):
        await bus.publish("prompts", task(i), msg_id=f"g{i}")


async def wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def queue_drains(bus: Bus, stage: str, timeout: float = 5.0) -> None:
    """Acks and terms are fire-and-forget: the server removes the message a moment later."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (left := await bus.pending(stage)) != 0:
        assert asyncio.get_running_loop().time() < deadline, f"{left} messages still on {stage}"
        await asyncio.sleep(0.02)


async def stop(task_: asyncio.Task) -> None:
    task_.cancel()
    await asyncio.gather(task_, return_exceptions=True)


async def test_publish_worker_ack(bus):
    seen = []

    async def handle(msg, ctx):
        seen.append((msg.group_id, ctx.msg_id, ctx.num_delivered, ctx.headers.get("traceparent")))

    await bus.publish("prompts", task(7), msg_id="g7", headers={"traceparent": "00-abc-def-01"})
    assert await bus.pending("prompts") == 1
    w = bus.make_worker("prompts", "rollout", handle, ack_wait=5)
    t = asyncio.create_task(w.run())
    await wait_for(lambda: w.counts["acked"] == 1)
    await stop(t)
    assert seen == [("g7", "g7", 1, "00-abc-def-01")]
    await queue_drains(bus, "prompts")  # acked → removed from the work queue


async def test_failing_handler_is_retried_then_dead_lettered(bus):
    attempts = []

    async def handle(msg, ctx):
        attempts.append(ctx.num_delivered)
        raise ValueError("reward service exploded\non line 2")

    await bus.publish("prompts", task(1), msg_id="g1")
    dead = await bus.js.subscribe(names.dead_subject(bus.run_id))
    w = bus.make_worker("prompts", "rollout", handle, max_deliver=3, backoff=(0.05,), ack_wait=5)
    t = asyncio.create_task(w.run())
    letter = await dead.next_msg(timeout=10)
    await stop(t)
    assert attempts == [1, 2, 3]
    assert w.counts == {"acked": 0, "retried": 2, "dead": 1}
    assert letter.headers["Meshrl-Error"] == "ValueError: reward service exploded on line 2"
    assert letter.headers["Meshrl-Deliveries"] == "3"
    assert common_pb2.PromptTask.FromString(letter.data).group_id == "g1"
    await queue_drains(bus, "prompts")  # terminated: gone from the queue


async def test_unparseable_body_is_dead_lettered_at_once(bus):
    calls = []

    async def handle(msg, ctx):
        calls.append(msg)

    subject = names.stage_subject(bus.run_id, "prompts")  # published there (origin.py), but not a PromptTask
    await bus.js.publish(subject, b"\xff\xff\xff", headers={"Nats-Msg-Id": "bad", ORIGIN_HEADER: subject})
    dead = await bus.js.subscribe(names.dead_subject(bus.run_id))
    t = asyncio.create_task(bus.worker("prompts", "rollout", handle, ack_wait=5))
    letter = await dead.next_msg(timeout=10)
    await stop(t)
    assert calls == []
    assert letter.headers["Meshrl-Error"].startswith("BadPayload:")


async def test_duplicate_msg_id_is_stored_once(bus):
    first = await bus.publish("prompts", task(3), msg_id="g3")
    again = await bus.publish("prompts", task(3), msg_id="g3")
    assert not first.duplicate and again.duplicate
    assert again.seq == first.seq
    assert await bus.pending("prompts") == 1


async def test_two_workers_share_one_durable_without_loss_or_duplicates(bus):
    n = 200
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def handler(name):
        async def handle(msg, ctx):
            seen[name].append(msg.group_id)
            await asyncio.sleep(0.001)

        return handle

    await publish_tasks(bus, n)
    tasks = [asyncio.create_task(bus.worker("prompts", "rollout", handler(k), batch=4, ack_wait=10)) for k in seen]
    await wait_for(lambda: len(seen["a"]) + len(seen["b"]) >= n)
    await asyncio.sleep(0.3)  # room for a duplicate delivery to show up
    for t in tasks:
        await stop(t)
    everything = seen["a"] + seen["b"]
    assert sorted(everything) == sorted(f"g{i}" for i in range(n))  # none lost, none twice
    assert seen["a"] and seen["b"]  # both took a share
    await queue_drains(bus, "prompts")


async def test_restarted_worker_resumes_and_gets_unacked_messages(nats_url, run_id):
    first = await Bus.connect(nats_url, run_id, name="rollout-a")
    await first.ensure_streams()
    await publish_tasks(first, 4)
    started = asyncio.Event()

    async def hang(msg, ctx):
        started.set()
        await asyncio.sleep(3600)  # a crash mid-work: never returns, never acks

    t = asyncio.create_task(first.worker("prompts", "rollout", hang, ack_wait=1.0))
    await started.wait()
    await first.nc.close()  # the process dies: no nak, no ack
    await stop(t)

    second = await Bus.connect(nats_url, run_id, name="rollout-b")
    got = []

    async def handle(msg, ctx):
        got.append((msg.group_id, ctx.num_delivered))

    w = second.make_worker("prompts", "rollout", handle, ack_wait=1.0)
    t2 = asyncio.create_task(w.run())
    await wait_for(lambda: len(got) == 4)
    await stop(t2)
    assert sorted(g for g, _ in got) == ["g0", "g1", "g2", "g3"]
    assert dict(got)["g0"] == 2  # the in-flight one came back as a redelivery
    await queue_drains(second, "prompts")
    await second.close()


async def test_pull_for_the_learner(bus):
    for i in (9, 10):
        await bus.publish("ready", common_pb2.Group(group_id=f"g{i}", policy_version=i), msg_id=f"g{i}")
    batch = await bus.pull("ready", "learner", max_msgs=4, timeout=1.0)
    assert [(d.message.group_id, d.message.policy_version) for d in batch] == [("g9", 9), ("g10", 10)]
    await batch[0].ack()
    await batch[1].nak()  # handed back: delivered again at once
    again = await bus.pull("ready", "learner", max_msgs=4, timeout=1.0)
    assert [(d.message.group_id, d.num_delivered) for d in again] == [("g10", 2)]
    await again[0].ack()
    assert await bus.pull("ready", "learner", max_msgs=4, timeout=0.2) == []
    await queue_drains(bus, "ready")


async def test_publish_checks_the_stage_message_type(bus):
    with pytest.raises(TypeError, match="stage 'prompts' carries meshrl.common.v1.PromptTask"):
        await bus.publish("prompts", common_pb2.Group(group_id="x"), msg_id="x")
    with pytest.raises(ValueError, match="unknown stage 'bogus'"):
        await bus.publish("bogus", task(1), msg_id="x")


async def test_message_whose_every_delivery_times_out_is_dead_lettered(bus):
    deliveries = []

    async def hang(msg, ctx):
        deliveries.append(ctx.num_delivered)
        await asyncio.sleep(3600)  # never acks: each delivery runs out its ack_wait

    await bus.publish("prompts", task(5), msg_id="g5")
    dead = await bus.js.subscribe(names.dead_subject(bus.run_id))
    t = asyncio.create_task(bus.worker("prompts", "rollout", hang, ack_wait=0.5, max_deliver=2, concurrency=4))
    letter = await dead.next_msg(timeout=10)
    await stop(t)
    assert deliveries == [1, 2]
    assert letter.headers["Meshrl-Error"].startswith("DeliveriesExhausted: no ack within ack_wait on any of 2")
    assert common_pb2.PromptTask.FromString(letter.data).group_id == "g5"
    await queue_drains(bus, "prompts")


async def test_misuse_fails_with_what_to_do(bus, nats_url, run_id):
    await bus.pull("ready", "learner", max_msgs=1, timeout=0.1)
    with pytest.raises(BusError, match="already has a consumer with another durable name than 'other'"):
        await bus.pull("ready", "other", max_msgs=1, timeout=0.1)
    fresh = await Bus.connect(nats_url, run_id + "x", name="t")
    with pytest.raises(BusError, match=r"stream MESHRL_.*_READY does not exist: call `await bus.ensure_streams\(\)`"):
        await fresh.pending("ready")
    with pytest.raises(BusError, match="does not exist"):
        await fresh.pull("ready", "learner", max_msgs=1, timeout=0.1)
    await fresh.close()


async def test_handlers_run_concurrently_up_to_the_limit(bus):
    await publish_tasks(bus, 4)
    all_in = asyncio.Barrier(4)  # only passes if 4 handlers are in flight at once
    done = []

    async def handle(msg, ctx):
        await asyncio.wait_for(all_in.wait(), 5)
        done.append(msg.group_id)

    t = asyncio.create_task(bus.worker("prompts", "rollout", handle, batch=4, concurrency=4, ack_wait=10))
    await wait_for(lambda: len(done) == 4)
    await stop(t)
    await queue_drains(bus, "prompts")


async def test_auto_in_progress_keeps_long_work_from_being_redelivered(bus):
    deliveries = []

    async def slow(msg, ctx):
        deliveries.append(ctx.num_delivered)
        await asyncio.sleep(1.6)  # > 3 × ack_wait

    await bus.publish("prompts", task(1), msg_id="g1")
    w = bus.make_worker("prompts", "rollout", slow, ack_wait=0.5, concurrency=2, auto_in_progress=True)
    t = asyncio.create_task(w.run())
    await wait_for(lambda: w.counts["acked"] == 1)
    await stop(t)
    assert deliveries == [1]  # never timed out, never handed to the second slot
