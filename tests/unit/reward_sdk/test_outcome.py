"""What a reward function returns → a valid ScoreResult (hand-computed cases)."""

import math

import pytest

from meshrl.api.reward.v1 import reward_pb2
from meshrl.reward_sdk.item import from_proto
from meshrl.reward_sdk.outcome import ERROR, OK, from_exception, to_result
from meshrl.transport.rpc.deadline import answer_budget


def test_float_and_details():
    r = to_result("a", (0.5, {"hits": 2}))
    assert (r.status, r.score, dict(r.details)) == (OK, 0.5, {"hits": 2.0})
    assert to_result("b", 1).score == 1.0


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (math.nan, "non-finite score nan"),
        (math.inf, "non-finite score inf"),
        ("0.5", "returned str"),
        (None, "returned NoneType"),
        (True, "returned bool"),
        ((1.0, {"x": math.nan}), "details for item 'a'"),
    ],
)
def test_unusable_values_are_errors(value, says):
    r = to_result("a", value)
    assert r.status == ERROR and says in r.error and r.score == 0.0


def test_exception_names_type_and_message():
    r = from_exception("a", KeyError("tests"))
    assert r.status == ERROR and r.error == "KeyError: 'tests'"


def test_item_decodes_json_fields():
    it = reward_pb2.ScoreItem(
        id="a",
        ground_truth_json='["2", 3]',
        extra_json='{"k": "ü"}',
        finish_reason=reward_pb2.FINISH_REASON_LENGTH,
        prompt_messages=[reward_pb2.ChatMessage(role="user", content="hi")],
    )
    item = from_proto(it, reward_pb2.ScoreRequest(component="c"))
    assert item.ground_truth == ["2", 3] and item.extra == {"k": "ü"} and item.finish_reason == "length"
    assert item.messages == [{"role": "user", "content": "hi"}] and item.component == "c"
    empty = from_proto(reward_pb2.ScoreItem(id="b"), reward_pb2.ScoreRequest())
    assert empty.ground_truth is None and empty.extra == {} and empty.finish_reason == ""
    with pytest.raises(ValueError, match="item 'c': ground_truth_json is not JSON"):
        from_proto(reward_pb2.ScoreItem(id="c", ground_truth_json="[1,"), reward_pb2.ScoreRequest())


def test_answer_budget_keeps_a_margin():
    assert answer_budget(None) is None
    assert answer_budget(10.0) == pytest.approx(9.5)  # margin capped at 0.5 s
    assert answer_budget(1.0) == pytest.approx(0.9)  # 10 %
    assert answer_budget(0.1) == pytest.approx(0.08)  # at least 20 ms
    assert answer_budget(0.01) == 0.0
