"""The house rule for function length, kept: product code (meshrl/, services/, gateway/) has at
most 15 functions over 30 lines and none over 45 (CONTRIBUTING: 10-30 lines; split a long one
where the math or the protocol has a seam)."""

from pathlib import Path

from benchmarks.function_lengths import HARD_LIMIT, SOFT_LIMIT, repo_lengths

REPO = Path(__file__).resolve().parents[2]
MOST_OVER_SOFT = 15


def test_functions_stay_short():
    rows = repo_lengths(REPO)
    over_hard = [f"{r.where} ({r.lines} lines)" for r in rows if r.lines > HARD_LIMIT]
    over_soft = [r for r in rows if r.lines > SOFT_LIMIT]
    assert not over_hard, f"functions over {HARD_LIMIT} lines; split them at a natural seam: {over_hard}"
    assert len(over_soft) <= MOST_OVER_SOFT, (
        f"{len(over_soft)} functions over {SOFT_LIMIT} lines (at most {MOST_OVER_SOFT}): "
        + ", ".join(f"{r.where} ({r.lines})" for r in sorted(over_soft, reverse=True))
    )
