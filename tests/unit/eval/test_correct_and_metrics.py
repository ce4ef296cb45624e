"""The accuracy rule (component value or total reward ≥ threshold; failed scores are wrong)
and the metrics computed from judged samples, with hand-computed numbers."""

import math

import pytest

from meshrl.eval.correct import judge
from meshrl.eval.metrics import summarize
from meshrl.eval.records import EvalSample


def sample(
    i, reward, *, mode="greedy", math_value=None, ok=True, tokens=4, finish="stop", source="arith", index=0
) -> EvalSample:
    comps = {
        "math": {"value": math_value, "status": "OK" if math_value is not None else "ERROR"},
        "fmt": {"value": 0.5, "status": "OK"},
    }
    return EvalSample(
        prompt_index=i,
        mode=mode,
        group_id=f"g{i}-{mode}",
        sample_index=index,
        prompt="p",
        response="r",
        ground_truth="7",
        data_source=source,
        num_tokens=tokens,
        finish_reason=finish,
        policy_version=0,
        reward=reward if ok else math.nan,
        components=comps,
        score_ok=ok,
    )


def test_component_rule_uses_the_raw_component_value():
    # total reward 1.0 from the format term alone must not count as correct
    samples = [
        sample(0, 1.5, math_value=1.0),
        sample(1, 1.0, math_value=0.0),
        sample(2, math.nan, math_value=None, ok=False),
    ]
    errors = judge(samples, "math", 1.0)
    assert [s.correct for s in samples] == [True, False, False] and errors == 1


def test_total_reward_rule():
    samples = [
        sample(0, 1.5, math_value=1.0),
        sample(1, 1.0, math_value=0.0),
        sample(2, 0.99, math_value=0.0),
        sample(3, 0.0, ok=False),
    ]
    errors = judge(samples, None, 1.0)
    assert [s.correct for s in samples] == [True, True, False, False] and errors == 1


def test_metrics_greedy_and_pass_at_k():
    greedy = [
        sample(0, 1.0, math_value=1.0, tokens=2),
        sample(1, 0.0, math_value=0.0, tokens=6, finish="length", source="other"),
        sample(2, math.nan, ok=False, tokens=4),
    ]
    sampled = [sample(0, v, mode="sampled", math_value=v, index=j) for j, v in enumerate([1, 0, 1, 0])]
    sampled += [sample(1, 0.0, mode="sampled", math_value=0.0, index=j) for j in range(4)]
    samples = greedy + sampled
    errors = judge(samples, "math", 1.0)
    m = summarize(samples, k=2, score_errors=errors)
    assert m["eval/n"] == 3 and m["eval/accuracy"] == pytest.approx(1 / 3)
    assert m["eval/reward_mean"] == pytest.approx(0.5)  # the failed score is left out
    assert m["eval/response_length_mean"] == pytest.approx(4.0)
    assert m["eval/clipped_ratio"] == pytest.approx(1 / 3)
    assert m["eval/accuracy/arith"] == pytest.approx(0.5) and m["eval/accuracy/other"] == 0.0
    # prompt 0: n=4, c=2 → 1 − C(2,2)/C(4,2) = 5/6; prompt 1: c=0 → 0
    assert m["eval/pass@2"] == pytest.approx((5 / 6 + 0) / 2)
    assert m["eval/sampled_accuracy"] == pytest.approx((0.5 + 0) / 2)
    assert m["eval/score_errors"] == 1


def test_greedy_only_has_no_pass_at_k():
    samples = [sample(0, 1.0, math_value=1.0)]
    m = summarize(samples, k=1, score_errors=judge(samples, "math", 1.0))
    assert m["eval/accuracy"] == 1.0 and not any(k.startswith("eval/pass@") for k in m)
    assert "eval/accuracy/arith" not in m  # one data source: no breakdown
