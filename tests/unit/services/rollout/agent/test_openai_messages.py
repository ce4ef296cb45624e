"""OpenAI chat shapes at the policy endpoint: messages normalised, how calls chain, the answer.

Run: .venv/bin/python -m pytest tests/unit/services/rollout/agent/test_openai_messages.py
"""

import json

import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.agent.policy import openai_messages as oa

HERMES = get_tool_parser("hermes")
CALL = {"id": "call_0_0", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "2*3"}'}}


def test_text_parts_are_joined_and_tool_calls_written_in_the_models_format():
    got = oa.normalise(
        [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "call_0_0", "content": "6"},
        ],
        HERMES,
    )
    assert got == [
        {"role": "user", "content": "ab"},
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "calculator", "arguments": {"expression": "2*3"}}</tool_call>',
        },
        {"role": "tool", "content": "6", "tool_call_id": "call_0_0"},
    ]


@pytest.mark.parametrize(
    "messages, problem",
    [
        ([], "messages must be a non-empty list"),
        ("hi", "messages must be a non-empty list"),
        ([{"role": "robot", "content": "x"}], "messages[0]: role must be one of system, user, assistant, tool"),
        (["hi"], "messages[0]: role must be one of"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
            "messages[0]: content must be a string or a list of text parts",
        ),
        (
            [{"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}],
            "messages[0]: tool_calls are [{id, type: function, function: {name, arguments}}]",
        ),
    ],
)
def test_malformed_messages_are_bad_requests(messages, problem):
    with pytest.raises(oa.BadRequest) as caught:
        oa.normalise(messages, HERMES)
    assert str(caught.value).startswith(problem)


KNOWN = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def test_a_call_that_extends_the_conversation_adds_its_tool_and_user_messages():
    added, why = oa.added_messages(
        KNOWN, [*KNOWN, {"role": "tool", "content": "6"}, {"role": "user", "content": "more"}]
    )
    assert why == "" and [m["role"] for m in added] == ["tool", "user"]


@pytest.mark.parametrize(
    "sent, why",
    [
        (KNOWN, "a call sent 2 messages; the conversation already had 2"),
        (
            [{"role": "user", "content": "HI"}, KNOWN[1], {"role": "user", "content": "x"}],
            "a call changed message 0 (user) of the conversation",
        ),
        (
            [KNOWN[0], {"role": "assistant", "content": "something else"}, {"role": "user", "content": "x"}],
            "a call changed message 1 (assistant) of the conversation",
        ),
        (
            [*KNOWN, {"role": "system", "content": "new rules"}],
            "a call added 'system' messages; after a reply only tool and user messages may follow",
        ),
        (
            [*KNOWN, {"role": "assistant", "content": "I said"}],
            "a call added 'assistant' messages; after a reply only tool and user messages may follow",
        ),
    ],
)
def test_a_call_that_does_not_extend_the_conversation_says_why(sent, why):
    assert oa.added_messages(KNOWN, sent) == ([], why)


def turn(text: str, calls=(), finish=pb.FINISH_REASON_STOP) -> pb.Turn:
    return pb.Turn(index=2, token_start=10, token_end=17, text=text, finish_reason=finish, tool_calls=list(calls))


def test_the_answer_has_the_calls_the_parser_read_and_openais_finish_reasons():
    record = turn(
        "x",
        [
            pb.ToolCallRecord(id="call_2_0", name="calculator", arguments_json='{"expression": "1"}'),
            pb.ToolCallRecord(id="call_2_1", name="", error="the call is not valid JSON"),
        ],
    )
    message = oa.answer_message(record, "")
    assert message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_2_0",
                "type": "function",
                "function": {"name": "calculator", "arguments": '{"expression": "1"}'},
            }
        ],
    }
    answer = oa.completion(record, message, model="policy", prompt_tokens=40)
    assert answer["choices"][0]["finish_reason"] == "tool_calls" and answer["model"] == "policy"
    assert answer["usage"] == {"prompt_tokens": 40, "completion_tokens": 7, "total_tokens": 47}
    cut = turn("abc", finish=pb.FINISH_REASON_LENGTH)
    assert oa.completion(cut, oa.answer_message(cut, "abc"), model="m", prompt_tokens=1)["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "abc"},
        "finish_reason": "length",
    }


def test_an_answer_sent_back_normalises_to_what_was_recorded():
    record = turn("t", [pb.ToolCallRecord(id="call_2_0", name="calculator", arguments_json='{"expression": "1"}')])
    message = oa.answer_message(record, "Let me compute.")
    as_sent_back = json.loads(json.dumps(message))  # what an OpenAI client appends to its messages
    assert oa.normalise([as_sent_back], HERMES) == oa.normalise([message], HERMES)
    assert oa.normalise([message], HERMES)[0]["content"] == (
        'Let me compute.<tool_call>{"name": "calculator", "arguments": {"expression": "1"}}</tool_call>'
    )
