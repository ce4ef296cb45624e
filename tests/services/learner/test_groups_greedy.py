"""groups_to_batch puts each group's greedy-sample reward (ReMax's baseline) on its rows, and
a group whose greedy sample failed to score is dropped, never trained with a NaN baseline."""

import math

import torch
from torch.testing import assert_close

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.groups import check_group, groups_to_batch
from meshrl.transport.bus.codec import pack_float32, pack_int32


def sample(reward: float) -> common_pb2.Sample:
    return common_pb2.Sample(
        response_token_ids=pack_int32([5, 6]), behaviour_logprobs=pack_float32([-1.0, -1.0]), reward=reward
    )


def group(rewards, greedy: float | None) -> common_pb2.Group:
    g = common_pb2.Group(task=common_pb2.PromptTask(prompt_token_ids=pack_int32([1, 2])))
    g.samples.extend(sample(r) for r in rewards)
    if greedy is not None:
        g.greedy_sample.CopyFrom(sample(greedy))
    return g


def test_each_row_carries_its_groups_greedy_reward():
    batch = groups_to_batch([group([1.0, 0.0], 0.5), group([1.0, 1.0, 0.0], 1.0)], pad_id=0, need_ref=False)
    assert_close(batch.greedy_rewards, torch.tensor([0.5, 0.5, 1.0, 1.0, 1.0]))
    assert_close(batch.rewards, torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0]))  # greedy not a row


def test_without_greedy_samples_the_batch_has_none():
    assert groups_to_batch([group([1.0], None)], pad_id=0, need_ref=False).greedy_rewards is None
    mixed = groups_to_batch([group([1.0], 0.0), group([1.0], None)], pad_id=0, need_ref=False)
    assert mixed.greedy_rewards is None


def test_an_unscored_greedy_sample_drops_the_group():
    verdict = check_group(group([1.0, 0.0], math.nan), current_version=0, max_staleness=0)
    assert (verdict.keep, verdict.reason) == (False, "failed_reward")
    assert check_group(group([1.0, 0.0], 0.0), current_version=0, max_staleness=0).keep
