"""An environment's answers: bad UTF-8 repaired, garbage refused, roles and rewards checked.

Run: .venv/bin/python -m pytest tests/unit/services/rollout/agent/test_answers.py
"""

import math

import pytest
from google.protobuf.message import DecodeError

from meshrl.api.env.v1 import env_pb2
from meshrl.services.rollout.agent import answers
from meshrl.services.rollout.agent.failures import InvalidAnswer


def with_bad_utf8() -> bytes:
    good = env_pb2.StepResponse(
        observation=[env_pb2.ChatMessage(role="tool", content="rAAr", name="calc")],
        reward=1.5,
        done=True,
        info_json='{"k": "AA"}',
    )
    return good.SerializeToString().replace(b"AA", b"\xff\xfe")


def test_the_stock_parser_refuses_an_answer_with_bad_utf8():
    with pytest.raises(DecodeError, match="bad UTF-8"):
        env_pb2.StepResponse.FromString(with_bad_utf8())


def test_bad_utf8_is_replaced_and_everything_else_kept():
    answer, repaired = answers.parse_answer(env_pb2.StepResponse)(with_bad_utf8())
    assert repaired and isinstance(answer, env_pb2.StepResponse)
    assert answer.observation[0].content == "r\ufffd\ufffdr" and answer.observation[0].name == "calc"
    assert (answer.reward, answer.done, answer.info_json) == (1.5, True, '{"k": "\ufffd\ufffd"}')


def test_a_good_answer_is_parsed_as_is():
    data = env_pb2.ResetResponse(tools=[env_pb2.Tool(name="t", parameters_json="{}")]).SerializeToString()
    answer, repaired = answers.parse_answer(env_pb2.ResetResponse)(data)
    assert not repaired and answer.tools[0].name == "t"


def test_bytes_that_are_no_protobuf_come_back_as_none_and_why():
    answer, why = answers.parse_answer(env_pb2.StepResponse)(b"\xff\xff\xff\xff garbage")
    assert answer is None and why.startswith("12 bytes that are no StepResponse (Error parsing message")


@pytest.mark.parametrize("role", ["assistant", "system", "", "banana"])
def test_a_step_cannot_speak_as_the_model_or_the_system(role):
    answer = env_pb2.StepResponse(observation=[env_pb2.ChatMessage(role=role, content="x")])
    with pytest.raises(
        InvalidAnswer, match=f"Step turn 0's observation has a message with role {role!r}; allowed: tool, user"
    ):
        answers.check_step(answer, 0)


def test_a_first_observation_may_hold_system_user_and_tool_messages():
    first = env_pb2.ResetResponse(
        observation=[
            env_pb2.ChatMessage(role="system", content="rules"),
            env_pb2.ChatMessage(role="tool", content="ok", name="n", tool_call_id="c"),
        ]
    )
    answers.check_reset(first)
    assert answers.observation(first.observation) == [
        {"role": "system", "content": "rules"},
        {"role": "tool", "content": "ok", "name": "n", "tool_call_id": "c"},
    ]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_reward_that_is_not_a_finite_number_is_refused(value):
    with pytest.raises(InvalidAnswer, match="a reward must be a finite number"):
        answers.check_step(env_pb2.StepResponse(reward=value), 3)


def test_an_unset_reward_is_none_and_zero_is_zero():
    assert answers.reward(env_pb2.StepResponse()) is None
    assert answers.reward(env_pb2.StepResponse(reward=0.0)) == 0.0


def test_a_tool_offered_twice_is_refused():
    with pytest.raises(InvalidAnswer, match=r"offered a tool name twice: \['t'\]"):
        answers.check_reset(env_pb2.ResetResponse(tools=[env_pb2.Tool(name="t"), env_pb2.Tool(name="t")]))


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (env_pb2.ResetResponse(tools=[env_pb2.Tool(name="a b")]), "tool name 'a b'"),
        (env_pb2.ResetResponse(info_json="[1]"), "info_json is not a JSON object"),
        (env_pb2.ResetResponse(tools=[env_pb2.Tool(name="t", parameters_json='{"type": "array"}')]), "type object"),
    ],
)
def test_what_the_kit_refuses_the_rollout_refuses(answer, says):
    with pytest.raises(InvalidAnswer, match=says):
        answers.check_reset(answer)
