"""on_failure on the run path, on a real nats-server with an external component whose
service is down (a real port nobody listens on): `{value: X}` publishes the group with X
counted; `stop` publishes nothing, naks the group and asks the service to stop."""

import asyncio

import pytest

from meshrl.addresses import free_port
from meshrl.api.common.v1 import common_pb2
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.failure_policy import StopRun
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.worker import DURABLE, IN_STAGE, RewardWorker


def make_group(run_id: str, group_id: str) -> common_pb2.Group:
    task = common_pb2.PromptTask(run_id=run_id, group_id=group_id, prompt_text="q", ground_truth="7")
    samples = [common_pb2.Sample(index=i, response_text=r) for i, r in enumerate(["abcd", "ab"])]
    return common_pb2.Group(run_id=run_id, group_id=group_id, task=task, samples=samples)


def worker_for(bus, on_failure) -> RewardWorker:
    cfgs = [
        C(name="len", kind="length_penalty", weight=1.0, params={"max_len": 4, "unit": "chars", "buffer": 2}),
        C(
            name="judge",
            kind="external",
            weight=2.0,
            address=f"127.0.0.1:{free_port()}",
            timeout_s=1.0,
            retry={"attempts": 1},
            on_failure=on_failure,
        ),
    ]
    scorer = GroupScorer(build_components(cfgs, bus.run_id), {c.name: c.on_failure for c in cfgs})
    return RewardWorker(bus, scorer, False, "reward-test")


async def test_value_policy_publishes_with_the_stated_value(bus):
    worker = worker_for(bus, {"value": 0.5})
    task = asyncio.create_task(bus.worker(IN_STAGE, DURABLE, worker.handle))
    try:
        await bus.publish("generated", make_group(bus.run_id, "v1"), msg_id="v1")
        got = []
        for _ in range(60):
            if got := await bus.pull("ready", "learner", max_msgs=1, timeout=0.5):
                await got[0].ack()
                break
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await worker.scorer.close()
    assert got, "no group on ready"
    group = got[0].message
    # len: clip((chars - (4 - 2)) / 2, 0, 1): 4 chars → -1, 2 chars → 0. judge: 0.5 × weight 2
    assert [s.reward for s in group.samples] == pytest.approx([-1 + 1.0, 0 + 1.0])
    judge = group.samples[0].reward_components[1]
    assert judge.status == common_pb2.SCORE_STATUS_ERROR and "on_failure: counted as 0.5" in judge.error


async def test_stop_policy_publishes_nothing_and_requests_the_stop(bus):
    worker = worker_for(bus, "stop")
    task = asyncio.create_task(bus.worker(IN_STAGE, DURABLE, worker.handle))
    try:
        await bus.publish("generated", make_group(bus.run_id, "s1"), msg_id="s1")
        await asyncio.wait_for(worker.stop_requested.wait(), timeout=30)
        leaked = await bus.pull("ready", "learner", max_msgs=1, timeout=0.5)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await worker.scorer.close()
    assert leaked == [] and worker.groups_done == 0
    assert isinstance(worker.stop_run, StopRun)
    assert str(worker.stop_run).startswith("reward service: component 'judge' failed (ERROR: ")
