"""A message over the size limit, on a real nats-server (the embedded one: max_payload 8 MB).

A group too big for the bus is refused before it is sent, with its size, the limit and what
to change; the connection stays usable; the prompt task whose group did not fit is never acked
as done: it is retried, then dead-lettered with that reason. Headers count towards the limit
(the server counts them; nats-py does not, and the server would close the connection)."""

import asyncio

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.origin import ORIGIN_HEADER
from meshrl.transport.bus.payload_limit import MessageTooLarge, check_payload_size, header_bytes
from meshrl.transport.bus.publish import publish_with_retry

pytestmark = pytest.mark.timeout(60)
LIMIT = 8 * 1024 * 1024  # the embedded server's MAX_PAYLOAD, as the server announces it


def huge_group(group_id: str, samples: int = 9, tokens_each: int = 256 * 1024) -> common_pb2.Group:
    """`samples` responses of `tokens_each` int32 token ids: 9 × 1 MiB, over 8 MiB."""
    task = common_pb2.PromptTask(group_id=group_id, prompt_text="Write a very long story.")
    return common_pb2.Group(
        group_id=group_id,
        task=task,
        samples=[common_pb2.Sample(index=i, response_token_ids=bytes(4 * tokens_each)) for i in range(samples)],
    )


async def test_the_server_announces_the_configured_limit(bus):
    assert bus.nc.max_payload == LIMIT


async def test_a_group_over_the_limit_is_refused_naming_size_limit_and_fix(bus):
    group = huge_group("big")
    with pytest.raises(MessageTooLarge) as info:
        await bus.publish("generated", group, msg_id="big")
    text = str(info.value)
    subject = names.stage_subject(bus.run_id, "generated")
    size = group.ByteSize() + header_bytes({"Nats-Msg-Id": "big", ORIGIN_HEADER: subject})  # body + headers
    assert f"a message of {size:,} bytes" in text
    assert f"max_payload of {LIMIT:,} bytes" in text
    assert "rollout.sampling.group_size" in text and "rollout.sampling.max_tokens" in text
    assert "raise max_payload" in text and names.stage_subject(bus.run_id, "generated") in text
    assert await bus.pending("generated") == 0  # nothing half-sent
    small = huge_group("small", samples=2, tokens_each=8)  # the connection is still good
    assert (await bus.publish("generated", small, msg_id="small")).seq == 1


async def test_headers_count_towards_the_limit(bus):
    subject = names.stage_subject(bus.run_id, "generated")
    headers = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01", "Nats-Msg-Id": "h1"}
    body = bytes(LIMIT - header_bytes(headers) + 1)  # fits alone, not with its headers
    assert len(body) <= LIMIT
    with pytest.raises(MessageTooLarge, match="over the NATS server's max_payload"):
        await publish_with_retry(bus.js, subject, body, headers=headers)
    check_payload_size(bus.nc, subject, body[:-1], headers)  # one byte less fits exactly
    assert bus.nc.is_connected


async def test_a_task_whose_group_does_not_fit_is_dead_lettered_with_the_reason_not_acked(bus):
    attempts = []

    async def generate(task, ctx):  # a rollout whose group is too big for the bus
        attempts.append(ctx.num_delivered)
        await bus.publish("generated", huge_group(task.group_id), msg_id=task.group_id)

    await bus.publish("prompts", common_pb2.PromptTask(group_id="g1", prompt_text="long"), msg_id="g1")
    dead = await bus.js.subscribe(names.dead_subject(bus.run_id))
    worker = bus.make_worker("prompts", "rollout", generate, max_deliver=2, backoff=(0.05,), ack_wait=5)
    run = asyncio.create_task(worker.run())
    letter = await dead.next_msg(timeout=10)
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)
    assert attempts == [1, 2] and worker.counts == {"acked": 0, "retried": 1, "dead": 1}
    reason = letter.headers["Meshrl-Error"]
    assert reason.startswith("MessageTooLarge: a message of ") and f"{LIMIT:,} bytes" in reason
    assert common_pb2.PromptTask.FromString(letter.data).group_id == "g1"  # the task itself is kept
    assert await bus.pending("generated") == 0
