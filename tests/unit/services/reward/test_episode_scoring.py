"""Multi-turn episodes at the reward service: what each kind of component reads, and the
`environment` component combined with a rule by weights.

The episode, as the rollout publishes it: turn 0 calls the calculator (its text holds a
wrong number, 41), the environment answers 42 (appended as the chat template's delta), turn 1
answers "The answer is 42"; `response_text` is the final turn. 7 response tokens, 5 of them the
model's. The environment gave turn rewards 0.25 and 0.5 (env_reward 0.75).
"""

import math

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2
from meshrl.config.schema import RewardComponentConfig as C
from meshrl.services.reward.components import build_components
from meshrl.services.reward.external import to_score_item
from meshrl.services.reward.rules.environment import NO_ENV_REWARD
from meshrl.services.reward.rules.verify_pool import shutdown_pools
from meshrl.services.reward.scorer import GroupScorer, group_items
from meshrl.services.reward.servicer import from_score_item
from meshrl.transport.bus.codec import pack_int32, pack_uint8

TURN_0 = '<tool_call>{"name": "calc", "arguments": {"expr": "6*7"}}</tool_call> maybe 41'
TURN_1 = "The answer is \\boxed{42}"
# the observation as the chat template appended it after turn 0 (the rollout's delta text)
OBSERVATION = "<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n"
RENDERED = TURN_0 + OBSERVATION + TURN_1


def episode_group(*, env_reward: bool = True, finish=common_pb2.FINISH_REASON_STOP) -> common_pb2.Group:
    task = common_pb2.PromptTask(group_id="g", prompt_text="What is 6*7?", ground_truth="42", environment="tool_arith")
    group = common_pb2.Group(group_id="g", task=task)
    sample = group.samples.add(
        index=0,
        response_text=TURN_1,  # the rollout's: the final turn
        response_token_ids=pack_int32([10, 11, 12, 50, 51, 13, 14]),
        loss_mask=pack_uint8([1, 1, 1, 0, 0, 1, 1]),
        env_reward=0.75 if env_reward else 0.0,
        has_env_reward=env_reward,
        finish_reason=finish,
    )
    sample.turns.add(
        index=0,
        token_start=0,
        token_end=3,
        observation_end=5,
        text=TURN_0,
        observation_text=OBSERVATION,
        **({"reward": 0.25} if env_reward else {}),
    )
    sample.turns.add(index=1, token_start=5, token_end=7, text=TURN_1, **({"reward": 0.5} if env_reward else {}))
    return group


@pytest.fixture(scope="module", autouse=True)
def _stop_pools():
    yield
    shutdown_pools()


def test_an_episode_item_carries_the_final_turn_the_rendered_episode_and_the_env_reward():
    (item,) = group_items(episode_group())
    assert item.response == TURN_1  # rules check the final turn
    assert item.episode_text == RENDERED
    assert item.episode == (("assistant", TURN_0), ("tool", OBSERVATION), ("assistant", TURN_1))
    assert item.num_tokens == 5 and item.env_reward == 0.75


def test_an_external_service_gets_the_whole_episode():
    wire = to_score_item(group_items(episode_group())[0])
    assert wire.response == RENDERED and wire.response_tokens == 5
    assert [(m.role, m.content) for m in wire.episode] == [
        ("assistant", TURN_0),
        ("tool", OBSERVATION),
        ("assistant", TURN_1),
    ]
    # and meshrl's own RewardService reads it back the same way (rules on the final turn)
    back = from_score_item(reward_pb2.ScoreItem.FromString(wire.SerializeToString()))
    assert (back.response, back.episode_text, back.episode) == (
        TURN_1,
        RENDERED,
        group_items(episode_group())[0].episode,
    )


def test_a_single_turn_sample_is_unchanged():
    group = episode_group()
    sample = group.samples[0]
    for name in ("turns", "loss_mask", "has_env_reward", "env_reward"):
        sample.ClearField(name)
    (item,) = group_items(group)
    assert (item.response, item.episode_text, item.episode, item.num_tokens, item.env_reward) == (
        TURN_1,
        "",
        (),
        7,
        None,
    )
    assert to_score_item(item).response == TURN_1 and not to_score_item(item).episode


async def test_environment_reward_combined_with_math_on_the_final_turn_by_weights():
    """reward = 1.0 · env (0.75) + 0.5 · math_verify(final turn: 42 = 42 → 1) = 1.25; math on
    the rendered episode would have read 41 first."""
    scorer = GroupScorer(
        build_components(
            [C(name="env", kind="environment", weight=1.0), C(name="correct", kind="math_verify", weight=0.5)]
        )
    )
    group = episode_group()
    await scorer.score_group(group)
    sample = group.samples[0]
    assert sample.reward == pytest.approx(1.25)
    assert [(c.name, c.value, c.weight, c.status) for c in sample.reward_components] == [
        ("env", 0.75, 1.0, common_pb2.SCORE_STATUS_OK),
        ("correct", 1.0, 0.5, common_pb2.SCORE_STATUS_OK),
    ]


async def test_an_episode_without_environment_reward_is_an_error_not_zero():
    scorer = GroupScorer(
        build_components(
            [C(name="env", kind="environment", weight=1.0), C(name="correct", kind="math_verify", weight=0.5)]
        )
    )
    group = episode_group(env_reward=False)
    await scorer.score_group(group)
    sample = group.samples[0]
    assert math.isnan(sample.reward)  # the learner drops the group as failed_reward
    env = sample.reward_components[0]
    assert env.status == common_pb2.SCORE_STATUS_ERROR and env.error == NO_ENV_REWARD


async def scored_env(group: common_pb2.Group, **params) -> tuple[float, common_pb2.RewardComponent]:
    scorer = GroupScorer(build_components([C(name="env", kind="environment", weight=2.0, params=params)]))
    await scorer.score_group(group)
    return group.samples[0].reward, group.samples[0].reward_components[0]


async def test_an_episode_cut_at_its_limits_without_a_reward_scores_the_truncated_value():
    """Out of turns or tokens before the environment rewarded it: 0 by default (trained on,
    not dropped), `truncated: X` for another value, `truncated: null` the old error."""
    cut = common_pb2.FINISH_REASON_LENGTH
    reward, env = await scored_env(episode_group(env_reward=False, finish=cut))
    assert (reward, env.value, env.status) == (0.0, 0.0, common_pb2.SCORE_STATUS_OK)
    reward, env = await scored_env(episode_group(env_reward=False, finish=cut), truncated=-0.5)
    assert (reward, env.value) == (-1.0, -0.5)  # weight 2 × -0.5
    reward, env = await scored_env(episode_group(env_reward=False, finish=cut), truncated=None)
    assert math.isnan(reward) and env.error == NO_ENV_REWARD
    # an environment that rewarded a turn before the cut keeps its reward
    reward, env = await scored_env(episode_group(env_reward=True, finish=cut), truncated=-0.5)
    assert (reward, env.value) == (1.5, 0.75)


async def test_a_single_turn_answer_cut_at_max_tokens_is_still_an_error():
    group = episode_group(env_reward=False, finish=common_pb2.FINISH_REASON_LENGTH)
    for name in ("turns", "loss_mask"):
        group.samples[0].ClearField(name)
    reward, env = await scored_env(group)
    assert math.isnan(reward) and env.status == common_pb2.SCORE_STATUS_ERROR


def test_environment_credit_must_be_turn_or_episode():
    # refused when the config is built (meshrl/config/reward_rules.py), before any service starts
    with pytest.raises(ValueError, match="credit: Input should be 'turn' or 'episode'"):
        build_components([C(name="env", kind="environment", params={"credit": "step"})])


@pytest.mark.parametrize("value", ["nan", float("inf"), "zero"])
def test_a_truncated_value_that_is_not_a_finite_number_is_refused(value):
    with pytest.raises(ValueError, match="truncated"):
        build_components([C(name="env", kind="environment", params={"truncated": value})])
