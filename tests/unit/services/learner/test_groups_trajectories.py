"""Multi-turn groups at the learner: a sound episode becomes a batch with holes in its loss
mask; each malformed trajectory (a bad input from a buggy or forged rollout) is refused with
a reason naming what is wrong, and the whole group is dropped, never trained, never a crash.

The sound episode (vocab 64): prompt [1 2 3]; response = turn 0 (3 tokens), an observation
(2 tokens), turn 1 (2 tokens): ids [10 11 12 50 51 13 14], loss mask [1 1 1 0 0 1 1].
"""

import pytest
import torch

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.groups import check_group, groups_to_batch, rollout_drop_reason
from meshrl.services.learner.step_metrics import rollout_metrics
from meshrl.transport.bus.codec import pack_float32, pack_int32, pack_uint8

VOCAB = 64
IDS = [10, 11, 12, 50, 51, 13, 14]
MASK = [1, 1, 1, 0, 0, 1, 1]
BEHAVIOUR = [-0.5, -1.0, -0.2, 0.0, 0.0, -0.7, -0.1]


def episode_group() -> common_pb2.Group:
    task = common_pb2.PromptTask(group_id="g", prompt_token_ids=pack_int32([1, 2, 3]), environment="tool_arith")
    group = common_pb2.Group(group_id="g", task=task, policy_version=2)
    for i in range(2):
        sample = group.samples.add(
            index=i,
            response_token_ids=pack_int32(IDS),
            behaviour_logprobs=pack_float32(BEHAVIOUR),
            ref_logprobs=pack_float32([-1.0] * 7),
            reward=float(i),
            loss_mask=pack_uint8(MASK),
            env_reward=float(i),
            has_env_reward=True,
        )
        sample.turns.add(index=0, token_start=0, token_end=3, observation_end=5, text="call", observation_text="42")
        sample.turns.add(index=1, token_start=5, token_end=7, text="answer 42", done=True)
    return group


def judge(group):
    return check_group(group, current_version=2, max_staleness=1, vocab_size=VOCAB, need_ref=True)


def with_sample(change):
    """A copy of the sound group whose sample 1 went through `change(sample)`."""

    def build():
        group = episode_group()
        change(group.samples[1])
        return group

    return build


def set_mask(values):
    return with_sample(lambda s: setattr(s, "loss_mask", pack_uint8(values)))


def set_turn(position, **fields):
    def change(sample):
        for name, value in fields.items():
            setattr(sample.turns[position], name, value)

    return with_sample(change)


def set_behaviour(values):
    return with_sample(lambda s: setattr(s, "behaviour_logprobs", pack_float32(values)))


def add_turn(**fields):
    return with_sample(lambda s: s.turns.add(**fields))


BAD = {
    "loss mask one short": (set_mask(MASK[:-1]), "loss_mask has 6 values for 7 response tokens"),
    "loss mask one long": (set_mask(MASK + [1]), "loss_mask has 8 values for 7 response tokens"),
    "loss mask value 2": (set_mask([1, 1, 2, 0, 0, 1, 1]), "loss_mask holds 2 at token 2; only 0 (observation) and 1"),
    "loss mask value 255": (set_mask([255] * 7), "loss_mask holds 255 at token 0"),
    "loss mask all zero": (set_mask([0] * 7), "loss_mask is all 0: the episode has no model token"),
    "behaviour log-prob at an observation": (
        set_behaviour([-0.5, -1.0, -0.2, -3.0, 0.0, -0.7, -0.1]),
        "behaviour_logprobs is -3 at observation token 3 (loss_mask 0)",
    ),
    "turn past the response": (set_turn(1, token_end=9), "turn 1 spans tokens [5, 9)"),
    "observation past the response": (set_turn(0, observation_end=8), "observation [3, 8)"),
    "turn ends before it starts": (set_turn(1, token_start=6, token_end=5), "turn 1 spans tokens [6, 5)"),
    "turns overlap": (set_turn(1, token_start=4), "before the previous turn's end 5"),
    "turn covers an observation token": (
        set_turn(0, token_end=4, observation_end=5),
        "turn 0's tokens [0, 4) include observation token 3",
    ),
    "observation covers a model token": (
        set_turn(0, token_end=2, observation_end=5),
        "turn 0's observation [2, 5) includes model token 2",
    ),
    "turns out of order": (set_turn(1, index=3), "turn 1 has index 3"),
    "a third turn beyond the response": (add_turn(index=2, token_start=7, token_end=8), "turn 2 spans tokens [7, 8)"),
}


def test_a_sound_episode_is_kept_and_becomes_a_batch_with_holes():
    group = episode_group()
    assert judge(group).keep
    batch = groups_to_batch([group], pad_id=0, need_ref=True)
    assert batch.loss_mask.tolist() == [MASK, MASK]
    assert batch.response_mask.tolist() == [[1.0] * 7] * 2  # observations are attended to
    assert batch.response_lengths().tolist() == [5.0, 5.0]
    assert torch.equal(batch.behaviour_logprobs[0], torch.tensor(BEHAVIOUR))


def test_single_turn_groups_keep_loss_mask_equal_to_response_mask():
    group = episode_group()
    for sample in group.samples:
        sample.ClearField("loss_mask")
        sample.ClearField("turns")
        sample.behaviour_logprobs = pack_float32([-0.5] * 7)
    batch = groups_to_batch([group], pad_id=0, need_ref=True)
    assert batch.loss_mask is batch.response_mask


def test_an_empty_loss_mask_beside_one_with_holes_means_all_model_tokens():
    group = episode_group()
    group.samples[0].ClearField("loss_mask")
    group.samples[0].ClearField("turns")
    group.samples[0].behaviour_logprobs = pack_float32([-0.5] * 7)
    assert judge(group).keep
    batch = groups_to_batch([group], pad_id=0, need_ref=True)
    assert batch.loss_mask.tolist() == [[1.0] * 7, MASK]


@pytest.mark.parametrize("name", BAD)
def test_each_malformed_trajectory_drops_its_group_with_the_reason(name):
    build, detail = BAD[name]
    verdict = judge(build())
    assert (verdict.keep, verdict.reason) == (False, "malformed")
    assert verdict.detail.startswith("sample 1: ") and detail in verdict.detail, verdict.detail


def test_a_group_the_rollout_dropped_is_never_trained_and_keeps_its_reason():
    group = episode_group()
    group.drop_reason = "env_timeout: episode g/1 Step turn 2 exceeded environment.timeout_s=10"
    verdict = judge(group)
    assert (verdict.keep, verdict.reason) == (False, "env_timeout")
    assert verdict.detail == group.drop_reason
    group.policy_version = 0  # stale too: the rollout's reason is the one recorded
    assert judge(group).reason == "env_timeout"


@pytest.mark.parametrize(
    "text, code",
    [
        ("episode g-17/3: environment DEADLINE_EXCEEDED: Step turn 1 took longer than 10 s", "env_deadline_exceeded"),
        ("episode g/0: environment INVALID_ANSWER: the reward is NaN", "env_invalid_answer"),
        ("env_unavailable: 3 retries", "env_unavailable"),
        ("the episodes' first prompts share no token (the first answers differ)", "rollout"),
        ("Env Error: two words", "rollout"),
        (": nothing before the colon", "rollout"),
        ("a" * 80 + ": too long for a label", "rollout"),
        ('{"label": "x"}', "rollout"),
    ],
)
def test_drop_reasons_become_short_label_safe_codes(text, code):
    assert rollout_drop_reason(text) == code


def test_step_metrics_count_the_models_tokens_and_the_forward_reads_all():
    metrics = rollout_metrics([episode_group()], version=3, trained_total=0)
    assert metrics["completions/max_length"] == 5  # 3 + 2 model tokens, not the 7 of the response
    assert metrics["perf/tokens"] == 2 * (3 + 7)  # the forward reads prompt and observations too


def rewarded_group(env_status=common_pb2.SCORE_STATUS_OK) -> common_pb2.Group:
    """The sound episode scored by `env` (weight 2, turn rewards 0.25 and 0.5: 0.75) and
    `correct` (weight 1, 1.0): Sample.reward = 2·0.75 + 1 = 2.5."""
    group = episode_group()
    for sample in group.samples:
        sample.turns[0].reward, sample.turns[1].reward = 0.25, 0.5
        sample.reward = 2.5
        sample.reward_components.add(name="env", value=0.75, weight=2.0, status=env_status)
        sample.reward_components.add(name="correct", value=1.0, weight=1.0, status=common_pb2.SCORE_STATUS_OK)
    return group


def test_turn_credited_rewards_sit_at_each_turns_last_model_token():
    batch = groups_to_batch([rewarded_group()], pad_id=0, need_ref=True, turn_credit=("env",))
    # turn 0 ends at token 2 (w·0.25 = 0.5), turn 1 at token 6 (w·0.5 = 1.0)
    assert batch.turn_rewards.tolist() == [[0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]] * 2
    assert batch.rewards.tolist() == [2.5, 2.5]  # the episode's total stays the reward


@pytest.mark.parametrize(
    "credit, status",
    [
        ((), common_pb2.SCORE_STATUS_OK),
        (("correct",), common_pb2.SCORE_STATUS_OK),
        (("env",), common_pb2.SCORE_STATUS_ERROR),
    ],
)
def test_no_turn_credit_without_a_credited_component_that_scored(credit, status):
    """Nothing credited, a component that is not the environment's (its turns carry no
    reward of its own), or an environment score that failed: everything stays at the end."""
    group = rewarded_group(env_status=status)
    if credit == ("correct",):
        for sample in group.samples:
            for turn in sample.turns:
                turn.ClearField("reward")
    assert groups_to_batch([group], pad_id=0, need_ref=True, turn_credit=credit).turn_rewards is None


def test_a_turn_reward_of_a_turn_without_model_tokens_goes_to_the_first_model_token():
    group = rewarded_group()
    group.samples[0].turns[0].token_end = 0  # an empty turn 0: [0, 0)
    group.samples[0].turns[0].observation_end = 0
    batch = groups_to_batch([group], pad_id=0, need_ref=False, turn_credit=("env",))
    assert batch.turn_rewards[0].tolist() == [0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
