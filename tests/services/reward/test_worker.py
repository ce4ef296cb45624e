"""The reward worker on a real nats-server: a Group on `generated` arrives scored on
`ready` (no reference) or `scored` (reference enabled), components and timing attached."""

import asyncio
import math

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.rules.verify_pool import shutdown_pools
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.worker import DURABLE, IN_STAGE, RewardWorker
from meshrl.transport.bus.codec import pack_int32
from meshrl.transport.bus.subjects import durable_of

RESPONSES = ["The answer is 7.", "\\boxed{8}", "7"]


def make_group(run_id: str, group_id: str) -> common_pb2.Group:
    task = common_pb2.PromptTask(run_id=run_id, group_id=group_id, prompt_text="What is 3+4?", ground_truth="7")
    samples = [
        common_pb2.Sample(index=i, response_text=r, response_token_ids=pack_int32(range(len(r))))
        for i, r in enumerate(RESPONSES)
    ]
    return common_pb2.Group(run_id=run_id, group_id=group_id, task=task, samples=samples)


@pytest.fixture(scope="module", autouse=True)
def _stop_pools():
    yield
    shutdown_pools()


async def route_one(bus, reference_enabled: bool, out_stage: str) -> common_pb2.Group:
    comps = build_components(
        [
            C(name="math", kind="math_verify", weight=1.0),
            C(name="len", kind="length_penalty", weight=0.5, params={"max_len": 10, "unit": "tokens"}),
        ],
        bus.run_id,
    )
    worker = RewardWorker(bus, GroupScorer(comps), reference_enabled, "reward-test")
    task = asyncio.create_task(bus.worker(IN_STAGE, DURABLE, worker.handle))
    try:
        await bus.publish("generated", make_group(bus.run_id, "g1"), msg_id="g1")
        for _ in range(60):
            got = await bus.pull(out_stage, durable_of(out_stage), max_msgs=1, timeout=0.5)
            if got:
                await got[0].ack()
                return got[0].message
        raise AssertionError(f"no group arrived on {out_stage!r}")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_group_scored_to_ready_without_reference(bus):
    group = await route_one(bus, reference_enabled=False, out_stage="ready")
    assert group.scored and group.group_id == "g1"
    # math 1/0/1; len (tokens 16, 9, 1 vs max_len 10, buffer 10): -1, -0.9, -0.1 (x0.5)
    assert [s.reward for s in group.samples] == pytest.approx([1 - 0.5, 0 - 0.45, 1 - 0.05])
    comps = group.samples[0].reward_components
    assert [(c.name, c.weight, c.status) for c in comps] == [
        ("math", 1.0, common_pb2.SCORE_STATUS_OK),
        ("len", 0.5, common_pb2.SCORE_STATUS_OK),
    ]
    assert comps[0].value == 1.0 and comps[1].value == -1.0 and comps[0].latency_s > 0
    (timing,) = group.timings
    assert (timing.stage, timing.service) == ("reward", "reward-test") and timing.end_unix >= timing.start_unix


async def test_group_scored_to_scored_when_reference_enabled(bus):
    group = await route_one(bus, reference_enabled=True, out_stage="scored")
    assert group.scored and len(group.samples) == 3
    assert await bus.pending("ready") == 0


async def test_failed_component_reaches_learner_as_nan_with_status(bus):
    comps = build_components(
        [
            C(name="math", kind="math_verify", weight=1.0),
            C(name="judge", kind="external", address="127.0.0.1:1", timeout_s=0.5),
        ],
        bus.run_id,
    )
    worker = RewardWorker(bus, GroupScorer(comps), False, "reward-test")
    await worker.handle(make_group(bus.run_id, "g2"))
    (got,) = await bus.pull("ready", "learner", max_msgs=1, timeout=5)
    await got.ack()
    sample = got.message.samples[0]
    assert math.isnan(sample.reward)
    assert sample.reward_components[0].status == common_pb2.SCORE_STATUS_OK
    assert sample.reward_components[1].status in (common_pb2.SCORE_STATUS_ERROR, common_pb2.SCORE_STATUS_TIMEOUT)
    assert "127.0.0.1:1" in sample.reward_components[1].error


async def test_a_group_the_rollout_dropped_is_passed_on_unscored(bus):
    """Its environment failed: no component is called (the external one would fail: nothing
    listens), the group goes on as it came for the learner's ledger."""
    comps = build_components([C(name="judge", kind="external", address="127.0.0.1:1", timeout_s=0.5)], bus.run_id)
    worker = RewardWorker(bus, GroupScorer(comps), False, "reward-test")
    group = make_group(bus.run_id, "g3")
    group.drop_reason = "env_timeout: episode g3/1 Step turn 2 exceeded 10 s"
    await worker.handle(group)
    (got,) = await bus.pull("ready", "learner", max_msgs=1, timeout=5)
    await got.ack()
    assert got.message.drop_reason == group.drop_reason and not got.message.scored
    assert all(not s.reward_components for s in got.message.samples)
