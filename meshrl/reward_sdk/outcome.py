"""One item's outcome → `ScoreResult`: a plain float, (float, details), or an exception.

Whatever the function does, the result is valid per the contract: an OK result always has
a finite score and finite details; anything else becomes ERROR with a message naming the
item and what was wrong, so a bug in the function never reaches training as a number.
"""

from __future__ import annotations

import math
import numbers

from meshrl.api.reward.v1 import reward_pb2

OK, ERROR, TIMEOUT = (reward_pb2.SCORE_STATUS_OK, reward_pb2.SCORE_STATUS_ERROR, reward_pb2.SCORE_STATUS_TIMEOUT)


def error(item_id: str, message: str, status: int = ERROR) -> reward_pb2.ScoreResult:
    return reward_pb2.ScoreResult(id=item_id, status=status, error=message)


def _split(value) -> tuple[object, object]:
    if isinstance(value, tuple) and len(value) == 2:
        return value
    return value, {}


def to_result(item_id: str, value) -> reward_pb2.ScoreResult:
    """The function's return value for `item_id` as a result (ERROR when unusable)."""
    score, details = _split(value)
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        return error(
            item_id,
            f"the reward function returned {type(score).__name__} for item {item_id!r}; "
            f"return a float or (float, {{name: float}})",
        )
    if not math.isfinite(score):
        return error(
            item_id,
            f"the reward function returned a non-finite score {float(score)!r} for "
            f"item {item_id!r}; return a finite float or raise to report an error",
        )
    if not isinstance(details, dict) or not all(
        isinstance(v, numbers.Real) and math.isfinite(v) for v in details.values()
    ):
        return error(
            item_id,
            f"the reward function's details for item {item_id!r} must be {{name: finite float}}, got {details!r:.200}",
        )
    return reward_pb2.ScoreResult(
        id=item_id, score=float(score), status=OK, details={str(k): float(v) for k, v in details.items()}
    )


def from_exception(item_id: str, err: BaseException) -> reward_pb2.ScoreResult:
    return error(item_id, f"{type(err).__name__}: {err}"[:2000])
