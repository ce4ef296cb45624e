"""Bad ready groups never reach a batch: each malformed message is named and dropped.

A good group (version 3, vocab 32, two samples of 3 tokens) passes; each mutation below is
one way a buggy or forged publisher could break it."""

import math

import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.groups import check_group
from meshrl.transport.bus.codec import pack_float32, pack_int32

VOCAB = 32


def good_group() -> common_pb2.Group:
    task = common_pb2.PromptTask(group_id="g", prompt_token_ids=pack_int32(np.array([1, 2, 3])))
    group = common_pb2.Group(group_id="g", task=task, policy_version=3)
    for i in range(2):
        group.samples.add(
            index=i,
            response_token_ids=pack_int32(np.array([4, 5, 31])),
            behaviour_logprobs=pack_float32(np.array([-0.1, -2.0, -0.0])),
            ref_logprobs=pack_float32(np.array([-0.2, -1.0, -3.0])),
            reward=1.0,
        )
    return group


def judge(group, version=3, need_ref=True):
    return check_group(group, current_version=version, max_staleness=1, vocab_size=VOCAB, need_ref=need_ref)


def mutate(**changes):
    def apply(group):
        sample = group.samples[1]
        for field, value in changes.items():
            if field == "prompt":
                group.task.prompt_token_ids = pack_int32(np.array(value))
            elif field == "version":
                group.policy_version = value
            elif field in ("response_token_ids",):
                setattr(sample, field, pack_int32(np.array(value)))
            elif field == "clear":
                sample.ClearField(value)
            else:
                setattr(sample, field, pack_float32(np.array(value)))
        return group

    return apply


BAD = {
    "response id at the vocab size": (
        mutate(response_token_ids=[4, 32, 1]),
        "malformed",
        "response token id 32 outside the vocabulary [0, 32)",
    ),
    "negative response id": (mutate(response_token_ids=[-1, 2, 1]), "malformed", "response token id -1 outside"),
    "prompt id out of vocab": (mutate(prompt=[1, 999]), "malformed", "prompt token id 999 outside"),
    "empty response": (mutate(response_token_ids=[]), "malformed", "sample 1: empty response"),
    "behaviour log-probs too short": (
        mutate(behaviour_logprobs=[-1.0, -1.0]),
        "malformed",
        "behaviour_logprobs has 2 values for 3 response tokens",
    ),
    "behaviour log-probs too long": (mutate(behaviour_logprobs=[-1.0] * 4), "malformed", "has 4 values for 3"),
    "NaN behaviour log-prob": (mutate(behaviour_logprobs=[-1.0, math.nan, -1.0]), "malformed", "not a log-probability"),
    "positive log-prob": (mutate(behaviour_logprobs=[-1.0, 0.5, -1.0]), "malformed", "not a log-probability"),
    "missing reference log-probs": (mutate(clear="ref_logprobs"), "malformed", "ref_logprobs has 0 values for 3"),
    "infinite reference log-prob": (mutate(ref_logprobs=[-1.0, -math.inf, -1.0]), "malformed", "ref_logprobs holds"),
    "a version never published": (
        mutate(version=999),
        "future_version",
        "policy_version 999 is newer than the learner's 3",
    ),
}


def test_a_sound_group_is_kept():
    assert judge(good_group()).keep


@pytest.mark.parametrize("name", BAD)
def test_each_malformed_group_is_dropped_with_its_reason(name):
    change, reason, detail = BAD[name]
    verdict = judge(change(good_group()))
    assert (verdict.keep, verdict.reason) == (False, reason)
    assert detail in verdict.detail


def test_reference_log_probs_are_not_required_without_a_reference():
    assert judge(mutate(clear="ref_logprobs")(good_group()), need_ref=False).keep


def test_a_failed_score_is_not_malformed():
    group = good_group()
    group.samples[0].reward = math.nan
    assert judge(group).reason == "failed_reward"
