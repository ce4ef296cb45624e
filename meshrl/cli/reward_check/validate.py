"""Check one ScoreResponse against its request: problems by contract row.

Problems are (row, text): row "results" (an item with no result), "ids" (an unknown or
repeated id), "statuses" (an unknown status, a failure without error text), "finite" (a
non-finite score or detail reported with status OK/UNSPECIFIED).
"""

from __future__ import annotations

import math
from collections import Counter

from meshrl.api.reward.v1 import reward_pb2

KNOWN_STATUSES = {
    reward_pb2.SCORE_STATUS_UNSPECIFIED,
    reward_pb2.SCORE_STATUS_OK,
    reward_pb2.SCORE_STATUS_ERROR,
    reward_pb2.SCORE_STATUS_TIMEOUT,
}
FAILED = {reward_pb2.SCORE_STATUS_ERROR, reward_pb2.SCORE_STATUS_TIMEOUT}


def id_problems(wanted: list[str], results) -> list[tuple[str, str]]:
    counts = Counter(r.id for r in results)
    missing = [i for i in wanted if counts[i] == 0]
    unknown = sorted(counts.keys() - set(wanted))
    repeated = sorted(i for i, n in counts.items() if n > 1)
    out = []
    if missing:
        out.append(("results", f"{len(missing)} of {len(wanted)} items got no result (e.g. {missing[:3]})"))
    if unknown:
        out.append(("ids", f"results for ids not in the request: {unknown[:3]}"))
    if repeated:
        out.append(("ids", f"several results for ids {repeated[:3]}"))
    return out


def result_problems(r: reward_pb2.ScoreResult) -> list[tuple[str, str]]:
    if r.status not in KNOWN_STATUSES:
        return [("statuses", f"id {r.id!r}: unknown status {r.status}")]
    if r.status in FAILED:
        return (
            []
            if r.error
            else [("statuses", f"id {r.id!r}: status {reward_pb2.ScoreStatus.Name(r.status)} without error text")]
        )
    if not math.isfinite(r.score):
        return [("finite", f"id {r.id!r}: score {r.score!r} with status {reward_pb2.ScoreStatus.Name(r.status)}")]
    bad = {k: v for k, v in r.details.items() if not math.isfinite(v)}
    return [("finite", f"id {r.id!r}: non-finite details {bad}")] if bad else []


def response_problems(request: reward_pb2.ScoreRequest, response: reward_pb2.ScoreResponse) -> list[tuple[str, str]]:
    problems = id_problems([it.id for it in request.items], response.results)
    for r in response.results:
        problems += result_problems(r)
    return problems


def status_counts(response: reward_pb2.ScoreResponse) -> str:
    counts = Counter(reward_pb2.ScoreStatus.Name(r.status).removeprefix("SCORE_STATUS_") for r in response.results)
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
