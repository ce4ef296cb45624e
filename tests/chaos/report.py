"""The chaos suite's table: one row per fault, printed at the end of the session by
tests/chaos/conftest.py (pytest's terminal summary), so CI logs show what each fault cost.

Each fault's row counts what happened within its own time window (a run of several faults
gives one row each). Columns: fault; recover s (from the fault to the next finished step); steps lost (trained
again after a learner resume); redelivered (repeat deliveries over every stage's consumers);
dropped (groups, by reason); restarts (the launcher's, by service).
"""

from __future__ import annotations

from collections import Counter

ROWS: list[dict] = []  # filled by record(), read by the terminal summary

COLUMNS = ("fault", "recover s", "steps lost", "redelivered", "dropped", "restarts")


def record(result) -> dict:
    """Add a finished scenario's row (tests.chaos.scenario.ScenarioResult); returns it."""
    recovery = result.recovery_s()
    restarts = Counter(r["service"] for r in result.restarts if r["event"] == "restart")
    row = {
        "fault": result.fault.name,
        "recover s": "-" if recovery is None else f"{recovery:.1f}",
        "steps lost": ",".join(map(str, result.steps_lost())) or "0",
        "redelivered": str(sum(result.redelivered.values())),
        "dropped": ", ".join(f"{r}={n}" for r, n in sorted(result.dropped().items())) or "0",
        "restarts": ", ".join(f"{s}×{n}" for s, n in sorted(restarts.items())) or "0",
    }
    ROWS.append(row)
    return row


def table(rows: list[dict]) -> list[str]:
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    line = lambda cells: " | ".join(cells[c].ljust(widths[c]) for c in COLUMNS)  # noqa: E731
    return [line({c: c for c in COLUMNS}), "-+-".join("-" * widths[c] for c in COLUMNS), *map(line, rows)]
