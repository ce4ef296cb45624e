"""`math_verify` rule in real spawned worker processes: equivalences, garbage, timeouts."""

import time

import pytest

from meshrl.services.reward.registry import get_rule
from meshrl.services.reward.rules.verify_pool import VerifyPool, shutdown_pools
from meshrl.services.reward.types import RewardItem, Status


@pytest.fixture(scope="module", autouse=True)
def _stop_pools():
    yield
    shutdown_pools()


def score(responses, ground_truth, **params):
    rule = get_rule("math_verify")
    items = [RewardItem(id=str(i), response=r, ground_truth=ground_truth) for i, r in enumerate(responses)]
    return rule.fn(items, rule.parse_params(params, component="math"))


def test_equivalent_answers_score_one():
    responses = [
        "7",
        "7.0",
        "\\boxed{7}",
        "The answer is 7.",
        "The answer is 7",
        "3 + 4 = 7",
        "I think 5, no wait: the final answer is 7",
        "\\frac{14}{2}",
        "$7$",
    ]
    scores = score(responses, "7")
    assert [(s.status, s.value) for s in scores] == [(Status.OK, 1.0)] * len(responses)


def test_wrong_and_garbage_answers_score_zero_ok():
    scores = score(["8", "The answer is 70.", "garbage", "", "\\boxed{6}"], "7")
    assert [(s.status, s.value) for s in scores] == [(Status.OK, 0.0)] * 5
    assert [s.details["extracted"] for s in scores] == [1.0, 1.0, 0.0, 0.0, 1.0]


def test_latex_ground_truth_and_custom_scores():
    scores = score(["\\boxed{\\frac{1}{2}}", "0.5", "1/3"], "\\frac{1}{2}", correct=2.0, incorrect=-1.0)
    assert [s.value for s in scores] == [2.0, 2.0, -1.0]


def test_unparseable_ground_truth_is_error():
    (s,) = score(["7"], "")
    assert s.status == Status.ERROR and "could not be parsed" in s.error


def test_pathological_input_times_out_and_others_still_score():
    # 9^(9^(9^9)) makes sympy hang; math-verify's own timeouts are off in workers
    t0 = time.monotonic()
    scores = score(["\\boxed{9^{9^{9^{9}}}}", "7", "8"], "7", timeout_s=1.0)
    assert scores[0].status == Status.TIMEOUT and "1s" in scores[0].error
    assert [(s.status, s.value) for s in scores[1:]] == [(Status.OK, 1.0), (Status.OK, 0.0)]
    assert time.monotonic() - t0 < 30  # 1 s deadline + a pool restart (slow on a loaded 2-core box)


def test_pool_fake_slow_function_times_out_and_crash_is_error():
    # fakes: time.sleep stands in for a slow verifier, os._exit for a crashing one
    import os

    pool = VerifyPool(workers=2, warm_module="time")
    try:
        out = pool.run(time.sleep, [(0.05,), (30,), (0.05,), (0.05,)], timeout_s=0.5)
        assert out[0] is None and out[2] is None and out[3] is None
        assert out[1].status == Status.TIMEOUT
        (crashed,) = pool.run(os._exit, [(3,)], timeout_s=5.0)
        assert crashed.status == Status.ERROR and "crashed" in crashed.error
        assert pool.run(int, [("4",), ("x",)], timeout_s=5.0)[0] == 4  # pool usable after restarts
    finally:
        pool.kill()
