"""External results matched to items by id: missing, extra, repeated ids and NaN."""

import math

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2
from meshrl.services.reward.external import match_results
from meshrl.services.reward.types import RewardItem, Status

ITEMS = [RewardItem(id="g/0", response="a"), RewardItem(id="g/1", response="b")]


def res(id, score, status=common_pb2.SCORE_STATUS_OK, error=""):
    return reward_pb2.ScoreResult(id=id, score=score, status=status, error=error)


def test_any_order_and_unspecified_status_is_ok():
    out = match_results(ITEMS, [res("g/1", 0.5, status=0), res("g/0", 1.5)], "svc")
    assert [(s.status, s.value) for s in out] == [(Status.OK, 1.5), (Status.OK, 0.5)]


def test_missing_id_is_error_for_that_item_only():
    out = match_results(ITEMS, [res("g/0", 1.0)], "svc")
    assert out[0].ok and out[1].status == Status.ERROR and "no result for id 'g/1'" in out[1].error


def test_extra_id_fails_the_batch_naming_it():
    out = match_results(ITEMS, [res("g/0", 1.0), res("g/1", 1.0), res("zzz", 1.0)], "svc")
    assert all(s.status == Status.ERROR and "unknown ids ['zzz']" in s.error for s in out)


def test_repeated_id_and_nan_and_passed_through_failure():
    results = [res("g/0", 1.0), res("g/0", 2.0), res("g/1", math.nan)]
    out = match_results(ITEMS, results, "svc")
    assert "2 results for id 'g/0'" in out[0].error and "non-finite" in out[1].error
    out = match_results(ITEMS, [res("g/0", 0, common_pb2.SCORE_STATUS_TIMEOUT, "judge slow"), res("g/1", 1)], "svc")
    assert out[0].status == Status.TIMEOUT and out[0].error == "svc: judge slow" and out[1].ok
