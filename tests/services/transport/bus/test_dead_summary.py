"""Dead letters counted by stage and reason on a real nats-server, and printed by `meshrl status`."""

import asyncio

from meshrl.cli.status import dead_letter_lines
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.dead_summary import dead_letter_summary, reason_of
from meshrl.transport.bus.origin import ORIGIN_HEADER


def test_reason_is_the_error_type():
    assert reason_of("BadPayload: Error parsing message") == "BadPayload"
    assert reason_of("") == "unknown"


async def test_summary_counts_letters_by_stage_and_reason(bus):
    assert await dead_letter_summary(bus.js, bus.run_id) == {"total": 0, "by_stage": {}, "reasons": []}
    # Dead letters as the workers write them (meshrl.transport.bus.dead): 2 × one reason on
    # `generated`, 1 × another on `scored`.
    letters = [
        ("generated", "BadPayload: Error parsing message 1"),
        ("generated", "BadPayload: Error parsing message 2"),
        ("scored", "ValueError: reward service exploded"),
    ]
    for i, (stage, error) in enumerate(letters):
        await bus.js.publish(
            names.dead_subject(bus.run_id),
            b"x",
            headers={"Meshrl-Stage": stage, "Meshrl-Error": error, "Nats-Msg-Id": f"dead.{stage}.{i}"},
        )
    summary = await dead_letter_summary(bus.js, bus.run_id)
    assert summary == {
        "total": 3,
        "by_stage": {"scored": 1, "generated": 2},
        "reasons": [
            {
                "stage": "generated",
                "reason": "BadPayload",
                "count": 2,
                "example": "BadPayload: Error parsing message 2",
            },
            {"stage": "scored", "reason": "ValueError", "count": 1, "example": "ValueError: reward service exploded"},
        ],
    }
    assert dead_letter_lines(summary) == [
        "dead letters: 3 (scored 1, generated 2)",
        "     2 × generated: BadPayload: Error parsing message 2",
        "     1 × scored: ValueError: reward service exploded",
    ]


async def test_a_worker_dead_letter_is_counted(bus):
    async def handle(msg, ctx):
        raise AssertionError("never called: the body does not parse")

    subject = names.stage_subject(bus.run_id, "prompts")  # published there (origin.py), but not a PromptTask
    await bus.js.publish(subject, b"\xff\xff\xff", headers={"Nats-Msg-Id": "bad", ORIGIN_HEADER: subject})
    worker = asyncio.create_task(bus.worker("prompts", "rollout", handle, ack_wait=5))
    try:
        for _ in range(100):
            summary = await dead_letter_summary(bus.js, bus.run_id)
            if summary["total"]:
                break
            await asyncio.sleep(0.05)
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
    assert summary["by_stage"] == {"prompts": 1} and summary["reasons"][0]["reason"] == "BadPayload"
