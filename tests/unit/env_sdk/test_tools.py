"""Tools from Python functions: the JSON Schema they declare and what a bad call becomes."""

import json
from typing import Literal

import pytest

from meshrl.env_sdk import Environment, FunctionTool, ToolCall, ToolCallError, Turn, tool


def scale(value: float, factor: int = 2, unit: Literal["m", "cm"] = "m") -> dict:
    """Multiply a length.

    Args:
        value: the length to scale.
        factor: how many times,
            a whole number.
    """
    return {"length": value * factor, "unit": unit}


def test_schema_from_signature_and_docstring():
    t = FunctionTool(scale)
    assert t.description == "Multiply a length."
    assert t.parameters == {
        "type": "object",
        "additionalProperties": False,
        "required": ["value"],
        "properties": {
            "value": {"type": "number", "description": "the length to scale."},
            "factor": {"type": "integer", "default": 2, "description": "how many times, a whole number."},
            "unit": {"type": "string", "enum": ["m", "cm"], "default": "m"},
        },
    }
    spec = t.spec()
    assert spec.name == "scale" and json.loads(spec.parameters_json) == t.parameters


def test_a_good_call_returns_json_text():
    assert json.loads(FunctionTool(scale).call('{"value": 1.5, "factor": 3}')) == {"length": 4.5, "unit": "m"}
    assert FunctionTool(lambda: "pong", name="ping").call("") == "pong"


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ('{"value": 1', "are not valid JSON"),  # bad JSON
        ("[1, 2]", "must be a JSON object, got list"),  # not an object
        ("{}", "argument 'value': Field required"),  # missing argument
        ('{"value": "tall"}', "argument 'value': Input should be a valid number"),  # wrong type
        ('{"value": 1, "colour": "red"}', "argument 'colour': unknown argument"),  # unknown argument
        ('{"value": 1, "unit": "km"}', "argument 'unit': Input should be 'm' or 'cm'"),
    ],
)
def test_bad_calls_name_what_is_wrong(arguments, says):
    with pytest.raises(ToolCallError, match=says):
        FunctionTool(scale).call(arguments)


def test_an_exception_in_the_tool_is_a_call_error():
    def divide(a: float, b: float) -> float:
        return a / b

    with pytest.raises(ToolCallError, match="divide failed: ZeroDivisionError: float division by zero"):
        FunctionTool(divide).call('{"a": 1, "b": 0}')


def test_environment_answers_calls_with_errors_as_observations():
    class Tools(Environment):
        tools = [scale, tool(lambda text: text.upper(), name="shout")]

    env = Tools()
    turn = Turn(
        0,
        "...",
        (
            ToolCall("c0", "scale", '{"value": 2}'),
            ToolCall("c1", "nope", "{}"),
            ToolCall("c2", "shout", '{"text": "hi"}'),
            ToolCall("c3", "scale", "{"),
        ),
    )
    answers = env.call_tools(turn)
    assert [(m.role, m.tool_call_id, m.name) for m in answers] == [
        ("tool", "c0", "scale"),
        ("tool", "c1", "nope"),
        ("tool", "c2", "shout"),
        ("tool", "c3", "scale"),
    ]
    assert json.loads(answers[0].content) == {"length": 4.0, "unit": "m"}
    assert answers[1].content == "error: there is no tool named 'nope'; the tools are: scale, shout"
    assert answers[2].content == "HI" and answers[3].content.startswith(
        "error: the arguments of scale are not valid JSON"
    )
    assert env.tool_errors == 2


def test_declaration_errors():
    with pytest.raises(TypeError, match=r"\*args"):
        FunctionTool(lambda *args: None, name="varargs")
    with pytest.raises(ValueError, match="tool name 'has space'"):
        FunctionTool(scale, name="has space")
    with pytest.raises(TypeError, match="two tools are named 'scale'"):
        type("Twice", (Environment,), {"tools": [scale, scale]})
