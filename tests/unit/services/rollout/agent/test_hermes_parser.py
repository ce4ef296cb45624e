"""The Hermes/Qwen tool-call parser: well-formed calls, and every malformed one becomes an error.

Run: .venv/bin/python -m pytest tests/unit/services/rollout/agent/test_hermes_parser.py
"""

import json

import pytest

from meshrl.services.rollout.agent.parsers import ParsedCall, get_tool_parser, list_tool_parsers

parse = get_tool_parser("hermes").parse


def test_text_without_calls_is_all_content():
    turn = parse("The answer is 42.")
    assert turn.content == "The answer is 42." and turn.calls == []


def test_one_call_with_text_around_it():
    turn = parse(
        'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "17*23"}}\n</tool_call>'
    )
    assert turn.content == "Let me compute."
    assert turn.calls == [ParsedCall("calculator", '{"expression": "17*23"}', "")]


def test_two_calls_keep_their_order():
    turn = parse(
        '<tool_call>{"name": "a", "arguments": {"x": 1}}</tool_call> and '
        '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    )
    assert [c.name for c in turn.calls] == ["a", "b"] and turn.content == "and"
    assert [json.loads(c.arguments_json) for c in turn.calls] == [{"x": 1}, {}]


def test_missing_arguments_mean_none():
    assert parse('<tool_call>{"name": "now"}</tool_call>').calls == [ParsedCall("now", "{}", "")]


def test_arguments_written_as_a_json_string_are_read_as_the_object():
    call = parse('<tool_call>{"name": "c", "arguments": "{\\"e\\": \\"1+1\\"}"}</tool_call>').calls[0]
    assert call == ParsedCall("c", '{"e": "1+1"}', "")


def test_unicode_arguments_survive_unescaped():
    call = parse('<tool_call>{"name": "say", "arguments": {"t": "héllo ✓"}}</tool_call>').calls[0]
    assert call.arguments_json == '{"t": "héllo ✓"}' and not call.error


@pytest.mark.parametrize(
    "body, error",
    [
        ("", "empty <tool_call></tool_call>"),
        ("   \n ", "empty <tool_call></tool_call>"),
        (
            '{"name": "c", "arguments": {"e": 1}',
            "the call is not valid JSON (Expecting ',' delimiter at line 1 column 36)",
        ),
        (
            "{name: 'c'}",
            "the call is not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)",
        ),
        ('{"name": "c"} trailing', "the call is not valid JSON (Extra data at line 1 column 15)"),
        ('{"name": "c", "arguments": {"x": NaN}}', "the call is not standard JSON (NaN is not allowed)"),
        ('{"name": "c", "arguments": {"x": Infinity}}', "the call is not standard JSON (Infinity is not allowed)"),
        ('["c", {}]', "the call must be a JSON object, got a JSON list"),
        ('"calculator"', "the call must be a JSON object, got a JSON str"),
        ("42", "the call must be a JSON object, got a JSON int"),
        ('{"arguments": {}}', 'the call has no "name" string'),
        ('{"name": 7, "arguments": {}}', 'the call has no "name" string'),
        ('{"name": "", "arguments": {}}', 'the call has no "name" string'),
    ],
)
def test_unreadable_calls_are_errors_naming_the_problem(body, error):
    (call,) = parse(f"<tool_call>{body}</tool_call>").calls
    assert call.error.startswith(error), call.error
    assert call.name == "" and '{"name": "<tool name>", "arguments": {<arguments>}}' in call.error  # how to fix


@pytest.mark.parametrize(
    "arguments, error",
    [
        ("[1, 2]", '"arguments" must be a JSON object, got a JSON list'),
        ("7", '"arguments" must be a JSON object, got a JSON int'),
        ("null", '"arguments" must be a JSON object, got a JSON NoneType'),
        ('"not json"', '"arguments" is not valid JSON (Expecting value at line 1 column 1)'),
        ('"[1]"', '"arguments" must be a JSON object, got a JSON list'),
    ],
)
def test_bad_arguments_keep_the_tool_name_and_say_what_is_wrong(arguments, error):
    (call,) = parse(f'<tool_call>{{"name": "calc", "arguments": {arguments}}}</tool_call>').calls
    assert (call.name, call.error) == ("calc", error)


def test_an_unclosed_call_is_an_error_and_ends_parsing():
    turn = parse('ok <tool_call>{"name": "calc", "arguments": {"e": "1+')
    assert turn.content == "ok"
    assert turn.calls == [ParsedCall("", "{}", "<tool_call> is never closed by </tool_call>")]


def test_a_good_call_before_an_unclosed_one_is_kept():
    turn = parse('<tool_call>{"name": "a"}</tool_call><tool_call>{"name": "b"')
    assert [(c.name, bool(c.error)) for c in turn.calls] == [("a", False), ("", True)]


def test_a_call_nested_in_a_call_is_bad_json_not_two_calls():
    (call,) = parse('<tool_call>{"name": "a", <tool_call>{"name": "b"}</tool_call>').calls
    assert call.error.startswith("the call is not valid JSON")


def test_a_stray_closing_tag_is_plain_text():
    turn = parse("no call here </tool_call>")
    assert turn.calls == [] and turn.content == "no call here </tool_call>"


def test_the_system_prompt_shows_each_tool_and_the_call_format():
    tool = {
        "type": "function",
        "function": {"name": "calculator", "description": "arithmetic", "parameters": {"type": "object"}},
    }
    text = get_tool_parser("hermes").tools_system_prompt([tool])
    assert f"<tools>\n{json.dumps(tool)}\n</tools>" in text
    assert '<tool_call>\n{"name": "<tool name>", "arguments": {<arguments>}}\n</tool_call>' in text


def test_an_unknown_format_names_the_registered_ones():
    assert list_tool_parsers() == ["hermes"]
    with pytest.raises(
        KeyError, match=r"unknown tool-call format 'hermez' \(did you mean 'hermes'\?\); registered: hermes"
    ):
        get_tool_parser("hermez")


def test_a_call_written_back_as_text_parses_to_the_same_call():
    hermes = get_tool_parser("hermes")
    text = hermes.call_text("calculator", '{"expression": "17*23"}')
    assert text == '<tool_call>{"name": "calculator", "arguments": {"expression": "17*23"}}</tool_call>'
    assert parse(text).calls == [ParsedCall("calculator", '{"expression": "17*23"}', "")]
    assert (
        parse(hermes.call_text("c", "not json")).calls[0].error
        == '"arguments" is not valid JSON (Expecting value at line 1 column 1)'
    )


def test_each_call_keeps_its_text_as_written():
    good, bad = '<tool_call>{"name": "a"}</tool_call>', "<tool_call>{not json</tool_call>"
    turn = parse(f"x {good} y {bad} z <tool_call>cut")
    assert [c.raw_text for c in turn.calls] == [good, bad, "<tool_call>cut"]
    assert [bool(c.error) for c in turn.calls] == [False, True, True]
