"""Rollout service parts without vLLM or NATS (fast): sample packing, version spans, the
weights follower's readiness and the worker's version gate (the notice checks are tested with
meshrl.transport.weights, in tests/unit/transport/weights/).

Run: .venv/bin/python -m pytest tests/services/rollout/test_parts.py -q
"""

import asyncio
from types import SimpleNamespace

import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.samples import oldest_version, sample_from_completion
from meshrl.services.rollout.worker import RolloutWorker, VersionBehind
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights.follow import WeightsFollower


def completion(token_ids, logprobs, finish="length", spans=None):
    return SimpleNamespace(
        index=2,
        token_ids=token_ids,
        text="abc",
        finish_reason=finish,
        logprobs=SimpleNamespace(logprobs=logprobs),
        weight_versions=spans,
    )


def test_sample_packs_ids_and_logprobs_and_maps_finish_reason():
    sample = sample_from_completion(completion([5, 9, 2], [-0.5, -1.25, -3.0], "stop"), 4)
    assert unpack_int32(sample.response_token_ids).tolist() == [5, 9, 2]
    np.testing.assert_array_equal(unpack_float32(sample.behaviour_logprobs), [-0.5, -1.25, -3.0])
    assert (sample.index, sample.response_text, sample.finish_reason, sample.policy_version) == (
        2,
        "abc",
        pb.FINISH_REASON_STOP,
        4,
    )
    assert sample_from_completion(completion([1], [-1.0], "length"), 0).finish_reason == pb.FINISH_REASON_LENGTH


def test_sample_refuses_a_logprob_count_that_differs_from_the_tokens():
    with pytest.raises(RuntimeError, match="2 log-probs for 3 tokens"):
        sample_from_completion(completion([1, 2, 3], [-1.0, -2.0]), 0)


def test_policy_version_is_the_oldest_span():
    spans = [SimpleNamespace(version="3", start=0, end=5), SimpleNamespace(version="4", start=5, end=9)]
    assert oldest_version(spans, fallback=9) == 3
    assert oldest_version(None, fallback=9) == 9
    assert sample_from_completion(completion([1], [-1.0], spans=spans), 7).policy_version == 3


class FakeUpdater:
    """Loads a version unless it is listed as bad."""

    def __init__(self, bad=()):
        self.engine = SimpleNamespace(version=0)
        self.bad, self.seen = set(bad), []

    async def apply(self, notice):
        self.seen.append(notice.version)
        if notice.version not in self.bad and notice.version > self.engine.version:
            self.engine.version = notice.version


class FakeState:
    def __init__(self, entry=None):
        self.entry = entry

    async def get(self, key):
        return self.entry if key == WEIGHTS_NOTICE_KEY else None  # no run version: an older learner


async def test_follower_is_ready_at_once_without_a_notice():
    follower = WeightsFollower(FakeState(None), FakeUpdater())
    await follower.start()
    assert follower.ready.is_set() and follower.held == 0


async def test_follower_is_not_ready_while_the_newest_version_failed():
    entry = SimpleNamespace(value=pb.WeightsNotice(version=2).SerializeToString())  # a KV entry (FAKE)
    follower = WeightsFollower(FakeState(entry), FakeUpdater(bad={2}))
    await follower.start()
    assert not follower.ready.is_set() and follower.latest_seen == 2 and follower.held == 0
    await follower.apply(pb.WeightsNotice(version=3))
    assert follower.ready.is_set() and follower.held == 3


async def test_worker_waits_for_the_version_then_gives_up():
    engine = SimpleNamespace(version=0, config=SimpleNamespace(replica_id="r-0"))
    worker = RolloutWorker(bus=None, engine=engine, version_wait_s=0.3)
    await worker.wait_for_version(0)

    async def bump():
        await asyncio.sleep(0.1)
        engine.version = 1

    await asyncio.gather(worker.wait_for_version(1), bump())
    with pytest.raises(VersionBehind, match="needs policy version >= 5, replica r-0 holds 1"):
        await worker.wait_for_version(5, "g")
