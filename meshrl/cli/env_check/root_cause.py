"""One root cause, one fix. The SDK checks every answer against the contract before it leaves
and, for one that breaks it (a Step observation with the role 'assistant', say), answers
INTERNAL "... raised ValueError: <problem> (meshrl would drop the episode)". Every later row
that Steps then fails with that same message — the concurrency row, the deadline row, the
malformed-calls row — and each would print its own canned fix (serve concurrently, honour
deadlines), sending the author after the wrong thing, while the contract row, which never saw
a bad answer arrive, passed. Here such rows point at the contract row instead, and the
contract row counts the refused answer as the contract problem it is.

    refused = sdk_refusals(rows)                 # ["step: <problem> (...)"] for the contract row
    rows = blamed(rows, contract, row_number)    # their fixes say "see row N"
"""

from __future__ import annotations

from dataclasses import replace

from meshrl.cli.reward_check.table import FAIL, Row

MARK = " (meshrl would drop the episode)"  # meshrl.env_sdk.answers: the contract check's ending
RAISED = "raised ValueError: "


def refusal(row: Row) -> str | None:
    """The contract problem a failed row's status names, when the SDK refused an answer."""
    if row.outcome != FAIL or MARK not in row.detail:
        return None
    head = row.detail.split(MARK, 1)[0]
    return head.rsplit(RAISED, 1)[-1] if RAISED in head else None


def sdk_refusals(rows: list[Row]) -> list[str]:
    """Each distinct refused problem once, named by the first row that met it."""
    seen: dict[str, str] = {}
    for row in rows:
        if (problem := refusal(row)) is not None:
            seen.setdefault(problem, f"{row.check}: {problem} (the SDK answered INTERNAL instead of sending it)")
    return list(seen.values())


def blamed(rows: list[Row], contract: Row, number: int) -> list[Row]:
    """Rows failed by a refused answer: their fix names the contract row (number `number`)."""
    if contract.outcome != FAIL:
        return rows
    fix = f"fails because answers break the contract: see row {number} ({contract.check!r}) and fix that first"
    return [replace(r, fix=fix) if refusal(r) is not None else r for r in rows]
