"""ReMax's greedy sample is scored like the group's samples: by the worker on a real
nats-server (rules) and by the example external reward service over a real gRPC port."""

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.rules.verify_pool import shutdown_pools
from meshrl.services.reward.scorer import GroupScorer, group_items
from meshrl.services.reward.worker import RewardWorker
from meshrl.transport.bus.codec import pack_int32


def sample(index: int, text: str) -> common_pb2.Sample:
    return common_pb2.Sample(index=index, response_text=text, response_token_ids=pack_int32(range(len(text))))


def greedy_group(run_id: str, greedy_text: str) -> common_pb2.Group:
    task = common_pb2.PromptTask(run_id=run_id, group_id="g1", prompt_text="What is 3+4?", ground_truth="7")
    task.sampling.greedy_baseline = True
    return common_pb2.Group(
        run_id=run_id,
        group_id="g1",
        task=task,
        samples=[sample(0, "\\boxed{7}"), sample(1, "\\boxed{8}")],
        greedy_sample=sample(2, greedy_text),
    )


@pytest.fixture(scope="module", autouse=True)
def _stop_pools():
    yield
    shutdown_pools()


def test_the_greedy_sample_is_one_more_item_of_the_group_batch():
    items = group_items(greedy_group("r", "\\boxed{7}"))
    assert [i.id for i in items] == ["g1/0", "g1/1", "g1/2"]
    assert items[2].response == "\\boxed{7}" and items[2].ground_truth == "7"


async def test_worker_scores_the_greedy_sample_and_keeps_it_apart(bus):
    comps = build_components(
        [
            C(name="math", kind="math_verify", weight=1.0),
            C(name="len", kind="length_penalty", weight=0.5, params={"max_len": 10, "unit": "tokens"}),
        ],
        bus.run_id,
    )
    worker = RewardWorker(bus, GroupScorer(comps), False, "reward-test")
    await worker.handle(greedy_group(bus.run_id, "The answer is 7."))
    (got,) = await bus.pull("ready", "learner", max_msgs=1, timeout=5)
    await got.ack()
    group = got.message
    # samples: math 1 / 0, 9 tokens each: len −0.9 (×0.5). greedy: math 1, 16 tokens: len −1 (×0.5)
    assert [s.reward for s in group.samples] == pytest.approx([1 - 0.45, 0 - 0.45])
    assert group.greedy_sample.reward == pytest.approx(1 - 0.5)
    assert [c.name for c in group.greedy_sample.reward_components] == ["math", "len"]
    assert len(group.samples) == 2 and group.scored


async def test_external_service_scores_the_greedy_sample(example_reward_address):
    # keywords answer,because, max 20 chars: "my answer" 1/2 keywords, 9 chars → 0.5
    comps = build_components(
        [C(name="keywords", kind="external", address=example_reward_address, weight=1.0, timeout_s=5.0)], "r1"
    )
    scorer = GroupScorer(comps)
    group = greedy_group("r1", "my answer")
    try:
        await scorer.score_group(group)
    finally:
        await scorer.close()
    assert group.greedy_sample.reward == pytest.approx(0.5)
    assert group.greedy_sample.reward_components[0].status == common_pb2.SCORE_STATUS_OK
    assert [s.reward for s in group.samples] == pytest.approx([0.0, 0.0])
