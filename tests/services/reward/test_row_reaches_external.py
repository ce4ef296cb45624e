"""A dataset row's fields reach an external reward service through the real reward worker
(real nats-server, an SDK service on a real port): ground truth as JSON (a list, not a
Python repr), extra_info, chat messages, token count and finish reason."""

import asyncio

from meshrl.api.common.v1 import common_pb2
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.inputs.data.rows import RowRef, validate_prompt_row
from meshrl.inputs.data.task_fields import task_fields
from meshrl.reward_sdk import Item, start
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.worker import DURABLE, IN_STAGE, RewardWorker
from meshrl.transport.bus.codec import pack_int32, pack_uint8

ROW = {
    "prompt": [{"role": "user", "content": "Two primes?"}],
    "reward_model": {"ground_truth": ["2", "3"]},
    "data_source": "primes",
    "extra_info": {"rubric": "both", "level": 2},
}


def group(run_id: str) -> common_pb2.Group:
    task = common_pb2.PromptTask(
        run_id=run_id,
        group_id="g1",
        prompt_text="<r>Two primes?</r>",
        **task_fields(validate_prompt_row(ROW, RowRef("train.jsonl", 1))),
    )
    sample = common_pb2.Sample(
        index=0,
        response_text="2 and 3",
        response_token_ids=pack_int32([5, 6, 7]),
        finish_reason=common_pb2.FINISH_REASON_STOP,
    )
    return common_pb2.Group(run_id=run_id, group_id="g1", task=task, samples=[sample])


async def test_row_fields_reach_the_external_service(bus):
    seen: list[Item] = []

    def judge(item: Item) -> float:
        seen.append(item)
        return float(all(p in item.response for p in item.ground_truth))

    server, port = await start(judge, host="127.0.0.1")
    comps = build_components([C(name="judge", kind="external", address=f"127.0.0.1:{port}", timeout_s=5)], bus.run_id)
    worker = RewardWorker(bus, GroupScorer(comps), False, "reward-test")
    task = asyncio.create_task(bus.worker(IN_STAGE, DURABLE, worker.handle))
    try:
        await bus.publish("generated", group(bus.run_id), msg_id="g1")
        (got,) = await bus.pull("ready", "learner", max_msgs=1, timeout=20)
        await got.ack()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await server.stop(0)
    (item,) = seen
    assert (item.id, item.prompt, item.response) == ("g1/0", "<r>Two primes?</r>", "2 and 3")
    assert item.ground_truth == ["2", "3"] and item.extra == {"rubric": "both", "level": 2}
    assert item.messages == [{"role": "user", "content": "Two primes?"}] and item.data_source == "primes"
    assert (item.response_tokens, item.finish_reason, item.truncated) == (3, "stop", False)
    assert item.component == "judge" and item.run_id == bus.run_id
    assert got.message.samples[0].reward == 1.0


async def test_an_episode_reaches_the_external_service_whole(bus):
    """A multi-turn episode: the service gets the rendered episode as `response`, its turns and
    observations as `episode`, and the model's own token count."""
    seen: list[Item] = []

    def judge(item: Item) -> float:
        seen.append(item)
        return float(item.episode[-1]["content"].endswith("5"))

    server, port = await start(judge, host="127.0.0.1")
    episode = group(bus.run_id)
    sample = episode.samples[0]
    sample.response_text = "it is 5"  # the rollout's: the final turn
    sample.response_token_ids = pack_int32([5, 6, 7, 8, 9])
    sample.loss_mask = pack_uint8([1, 1, 0, 0, 1])
    sample.turns.add(
        index=0, token_start=0, token_end=2, observation_end=4, text="call add(2,3)", observation_text="<tool>5</tool>"
    )
    sample.turns.add(index=1, token_start=4, token_end=5, text="it is 5")
    comps = build_components([C(name="judge", kind="external", address=f"127.0.0.1:{port}", timeout_s=5)], bus.run_id)
    try:
        await RewardWorker(bus, GroupScorer(comps), False, "reward-test").handle(episode)
        (got,) = await bus.pull("ready", "learner", max_msgs=1, timeout=20)
        await got.ack()
    finally:
        await server.stop(0)
    (item,) = seen
    assert item.response == "call add(2,3)<tool>5</tool>it is 5" and item.response_tokens == 3
    assert item.episode == [
        {"role": "assistant", "content": "call add(2,3)"},
        {"role": "tool", "content": "<tool>5</tool>"},
        {"role": "assistant", "content": "it is 5"},
    ]
    assert got.message.samples[0].reward == 1.0
