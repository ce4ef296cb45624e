"""Tool calls checked against the episode's tools: unknown tools, wrong argument types, too many.

Run: .venv/bin/python -m pytest tests/unit/services/rollout/agent/test_tool_calls.py
"""

import json

import pytest

from meshrl.services.rollout.agent.failures import InvalidAnswer
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.agent.tool_calls import check_calls, error_observation, rejected_calls, tool_spec

CALC = tool_spec(
    "calculator",
    "evaluate an arithmetic expression",
    json.dumps(
        {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
            "additionalProperties": False,
        }
    ),
)
TOOLS = {"calculator": CALC}


def checked(text: str, max_calls: int = 4, turn: int = 2):
    return check_calls(get_tool_parser("hermes").parse(text), TOOLS, turn, max_calls)


def call(name: str, arguments) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_a_valid_call_is_sent_with_an_id_of_its_turn():
    (record,) = checked(call("calculator", {"expression": "2+2"}))
    assert (record.id, record.name, record.error) == ("call_2_0", "calculator", "")
    assert json.loads(record.arguments_json) == {"expression": "2+2"}


@pytest.mark.parametrize(
    "arguments, error",
    [
        (
            {"expression": 5},
            "the arguments do not match calculator's parameters: 5 is not of type 'string' (at expression)",
        ),
        (
            {},
            "the arguments do not match calculator's parameters: 'expression' is a required property (at (the arguments))",
        ),
        (
            {"expression": "1", "x": 1},
            "the arguments do not match calculator's parameters: Additional properties are "
            "not allowed ('x' was unexpected) (at (the arguments))",
        ),
    ],
)
def test_arguments_that_break_the_schema_are_errors(arguments, error):
    (record,) = checked(call("calculator", arguments))
    assert record.error == error


def test_an_unknown_tool_is_an_error_listing_the_tools():
    (record,) = checked(call("calc", {"expression": "1"}))
    assert record.error == "unknown tool 'calc'; the tools are: calculator"
    assert (
        check_calls(get_tool_parser("hermes").parse(call("x", {})), {}, 0, 4)[0].error
        == "unknown tool 'x'; the tools are: none"
    )


def test_calls_beyond_the_limit_are_answered_with_an_error():
    records = checked(call("calculator", {"expression": "1"}) * 3, max_calls=2)
    assert [r.error for r in records[:2]] == ["", ""]
    assert records[2].error == "too many tool calls in one turn: at most 2 are answered"
    assert [r.id for r in records] == ["call_2_0", "call_2_1", "call_2_2"]


def test_a_parse_error_is_kept_on_the_record():
    (record,) = checked("<tool_call>{oops</tool_call>")
    assert record.error.startswith("the call is not valid JSON")


def test_the_error_observation_is_a_tool_message_answering_the_call():
    (record,) = checked(call("calc", {}))
    assert error_observation(record) == {
        "role": "tool",
        "name": "calc",
        "tool_call_id": "call_2_0",
        "content": "error: unknown tool 'calc'; the tools are: calculator",
    }


@pytest.mark.parametrize(
    "parameters_json, problem",
    [
        ("{not json", "parameters_json is not JSON"),
        ("[1]", "parameters_json must be a JSON Schema object, got list"),
        ('{"type": "objekt"}', "parameters_json is not a valid JSON Schema"),
    ],
)
def test_an_environment_tool_without_a_schema_is_an_invalid_answer(parameters_json, problem):
    with pytest.raises(InvalidAnswer, match=problem):
        tool_spec("t", "", parameters_json)


def test_an_empty_schema_means_no_arguments_required():
    spec = tool_spec("now", "the time", "")
    assert spec.parameters == {} and spec.as_openai()["function"]["name"] == "now"


def test_the_refused_calls_go_to_the_environment_with_their_reason_and_text():
    text = call("calculator", {"expression": "2+2"}) + "<tool_call>{bad</tool_call>" + call("calc", {"e": 1})
    parsed = get_tool_parser("hermes").parse(text)
    records = check_calls(parsed, TOOLS, 1, 4)
    refused = rejected_calls(parsed, records)
    assert [(r.id, r.name, r.raw_text) for r in refused] == [
        ("call_1_1", "", "<tool_call>{bad</tool_call>"),
        ("call_1_2", "calc", call("calc", {"e": 1})),
    ]
    assert refused[0].reason == records[1].error and refused[0].reason.startswith("the call is not valid JSON")
    assert refused[1].reason == "unknown tool 'calc'; the tools are: calculator"
    assert (refused[0].arguments_json, json.loads(refused[1].arguments_json)) == ("", {"e": 1})
