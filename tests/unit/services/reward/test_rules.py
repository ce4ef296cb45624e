"""Built-in rule rewards: hand-checked scores per rule, and params validation."""

import pytest

from meshrl.config import ConfigError
from meshrl.services.reward.registry import get_rule
from meshrl.services.reward.types import RewardItem, Status


def run(kind: str, params: dict, responses: list[str], ground_truth: str = "", num_tokens=None):
    rule = get_rule(kind)
    tokens = num_tokens or [0] * len(responses)
    items = [
        RewardItem(id=str(i), response=r, ground_truth=ground_truth, num_tokens=n)
        for i, (r, n) in enumerate(zip(responses, tokens))
    ]
    return rule.fn(items, rule.parse_params(params, component="test"))


def test_exact_match_default_is_case_insensitive_and_strips():
    assert run("exact_match", {}, ["Paris", "  paris \n", "PARIS", "Paris!", "Lyon"], "paris") == [1, 1, 1, 0, 0]


def test_exact_match_case_sensitive_no_strip():
    params = {"case_sensitive": True, "strip": False}
    assert run("exact_match", params, ["Paris", "paris", " Paris"], "Paris") == [1, 0, 0]


def test_exact_match_collapses_inner_whitespace():
    assert run("exact_match", {}, ["new   york", "new\tyork", "newyork"], "New York") == [1, 1, 0]


def test_regex_search_and_custom_scores():
    params = {"pattern": r"\\boxed\{[^}]+\}", "match": 0.5, "no_match": -0.5}
    assert run("regex", params, ["so \\boxed{7}", "7", "\\boxed{}"]) == [0.5, -0.5, -0.5]


def test_regex_fullmatch_with_dotall():
    params = {"pattern": r"<think>.*</think>\s*<answer>.*</answer>", "flags": "s", "fullmatch": True}
    responses = [
        "<think>a\nb</think>\n<answer>7</answer>\n",
        "<answer>7</answer>",
        "x <think></think><answer>7</answer>",
    ]
    assert run("regex", params, responses) == [1.0, 0.0, 0.0]


def test_regex_bad_pattern_names_the_problem():
    with pytest.raises(ConfigError, match="not a valid regular expression"):
        get_rule("regex").parse_params({"pattern": "(unclosed"}, component="fmt")


def test_length_penalty_cap_mode_linear_in_buffer():
    # max_len 10, buffer 4: free up to 6 chars, then -0.25 per char, -1 from 10 on (x penalty 2)
    params = {"max_len": 10, "buffer": 4, "penalty": 2.0}
    scores = run("length_penalty", params, ["x" * n for n in (0, 6, 7, 9, 10, 25)])
    assert [s.value for s in scores] == [0.0, 0.0, -0.5, -1.5, -2.0, -2.0]
    assert all(s.status == Status.OK for s in scores)


def test_length_penalty_target_mode_in_tokens():
    # target 8 tokens: -|n-8|/8, floored at -1
    scores = run("length_penalty", {"target": 8, "unit": "tokens"}, ["a", "b", "c", "d"], num_tokens=[8, 4, 10, 40])
    assert [s.value for s in scores] == [0.0, -0.5, -0.25, -1.0]


def test_length_penalty_tokens_unknown_is_error_not_zero():
    scores = run("length_penalty", {"max_len": 8, "unit": "tokens"}, ["some text"], num_tokens=[0])
    assert scores[0].status == Status.ERROR and "unit: chars" in scores[0].error


def test_length_penalty_needs_exactly_one_mode():
    with pytest.raises(ConfigError, match="exactly one of max_len"):
        get_rule("length_penalty").parse_params({}, component="len")


def test_unknown_param_and_unknown_kind_name_what_is_allowed():
    with pytest.raises(ConfigError, match=r"Allowed params: case_sensitive, strip"):
        get_rule("exact_match").parse_params({"casesensitive": True}, component="em")
    with pytest.raises(
        ConfigError,
        match=r"unknown reward rule 'nope'; registered: environment, exact_match, length_penalty, math_verify, "
        r"reasoning_gym, regex.* Or kind: external",
    ):
        get_rule("nope")


def test_rule_params_refuse_a_non_finite_number_naming_the_component():
    with pytest.raises(ConfigError, match=r"reward.components\[len\].params .*penalty"):
        get_rule("length_penalty").parse_params({"penalty": float("inf")}, "len")
