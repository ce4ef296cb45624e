"""Rows of the conformance report and their table (a fix printed under every failure)."""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, INFO = "PASS", "FAIL", "INFO"


@dataclass(frozen=True)
class Row:
    check: str
    outcome: str  # PASS, FAIL or INFO (optional features: reported, never failing)
    detail: str
    fix: str = ""
    blocking: bool = False  # no connection at all: the suite stops here (every other row would say the same)


def any_failed(rows: list[Row]) -> bool:
    return any(r.outcome == FAIL for r in rows)


def format_table(rows: list[Row]) -> str:
    width = max(len(r.check) for r in rows)
    lines = [f"{'check'.ljust(width)}  result  detail", f"{'-' * width}  ------  ------"]
    for r in rows:
        lines.append(f"{r.check.ljust(width)}  {r.outcome.ljust(6)}  {r.detail}")
        if r.outcome == FAIL and r.fix:
            lines.append(f"{''.ljust(width)}  {'fix:'.ljust(6)}  {r.fix}")
    failed = sum(r.outcome == FAIL for r in rows)
    lines.append(
        f"{len(rows) - failed} of {len(rows)} checks passed" if not failed else f"{failed} of {len(rows)} checks FAILED"
    )
    return "\n".join(lines)
