"""The kit's answer checks, on hand-made responses: each problem lands in its contract row."""

import math

from meshrl.api.reward.v1 import reward_pb2 as pb
from meshrl.cli.reward_check.table import FAIL, PASS, Row, any_failed, format_table
from meshrl.cli.reward_check.validate import response_problems, status_counts

REQUEST = pb.ScoreRequest(items=[pb.ScoreItem(id="a"), pb.ScoreItem(id="b"), pb.ScoreItem(id="c")])
OK, ERROR, TIMEOUT = pb.SCORE_STATUS_OK, pb.SCORE_STATUS_ERROR, pb.SCORE_STATUS_TIMEOUT


def problems(*results: pb.ScoreResult) -> list[tuple[str, str]]:
    return response_problems(REQUEST, pb.ScoreResponse(results=results))


def test_a_correct_answer_in_any_order_has_no_problem():
    answer = (
        pb.ScoreResult(id="c", score=1, status=OK),
        pb.ScoreResult(id="a", status=ERROR, error="x"),
        pb.ScoreResult(id="b", score=0.5, status=0),
    )  # UNSPECIFIED with a finite score is fine
    assert problems(*answer) == []
    assert status_counts(pb.ScoreResponse(results=answer)) == "1 ERROR, 1 OK, 1 UNSPECIFIED"


def test_each_breach_in_its_row():
    found = problems(
        pb.ScoreResult(id="a", score=math.nan, status=OK),
        pb.ScoreResult(id="a", score=1, status=OK),
        pb.ScoreResult(id="zz", score=1, status=OK),
        pb.ScoreResult(id="b", status=TIMEOUT),
        pb.ScoreResult(id="c", score=1, status=7, details={"x": math.inf}),
    )
    assert found == [
        ("ids", "results for ids not in the request: ['zz']"),
        ("ids", "several results for ids ['a']"),
        ("finite", "id 'a': score nan with status SCORE_STATUS_OK"),
        ("statuses", "id 'b': status SCORE_STATUS_TIMEOUT without error text"),
        ("statuses", "id 'c': unknown status 7"),
    ]


def test_missing_results_and_non_finite_details():
    found = problems(pb.ScoreResult(id="a", score=1, status=OK, details={"x": -math.inf}))
    assert found == [
        ("results", "2 of 3 items got no result (e.g. ['b', 'c'])"),
        ("finite", "id 'a': non-finite details {'x': -inf}"),
    ]


def test_table_prints_fix_under_failures_only():
    rows = [Row("health", PASS, "SERVING", "never shown"), Row("ids matched", FAIL, "dup", "copy ids")]
    assert any_failed(rows)
    assert format_table(rows).splitlines() == [
        "check        result  detail",
        "-----------  ------  ------",
        "health       PASS    SERVING",
        "ids matched  FAIL    dup",
        "             fix:    copy ids",
        "1 of 2 checks FAILED",
    ]
