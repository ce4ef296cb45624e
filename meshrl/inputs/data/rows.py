"""Validate dataset rows: verl-style prompt rows and TRL-style DPO rows.

Prompt row (verl):  {"prompt": [{"role": "user", "content": "..."}] | "...",
                     "reward_model": {"ground_truth": "7", ...}, "data_source": "arithmetic",
                     "extra_info": {...}}            # data_source and extra_info optional
DPO row (TRL):      {"prompt": ..., "chosen": ..., "rejected": ...}   # each str or messages

`prompt_row_problems` / `dpo_row_problems` list every problem of a row as (field, fix);
`validate_prompt_row` / `validate_dpo_row` raise `DatasetError` on the first one, naming the
file, the line (jsonl, 1-based) or row index (parquet, 0-based), the field and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
GROUND_TRUTH_TYPES = (str, int, float, list)


class DatasetError(ValueError):
    """A dataset file or row is unusable; the message says where, which field and the fix."""


@dataclass(frozen=True)
class RowRef:
    """Where a row came from: `train.jsonl line 3` or `train.parquet row 2`."""

    file: str
    index: int
    unit: str = "line"  # "line" (jsonl, 1-based) or "row" (parquet, 0-based)

    def __str__(self) -> str:
        return f"{self.file} {self.unit} {self.index}"


@dataclass(frozen=True)
class PromptRow:
    ref: RowRef
    prompt: list[dict[str, str]] | str
    ground_truth: Any
    data_source: str | None = None  # None when the file did not give one
    extra_info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PreferenceRow:
    ref: RowRef
    prompt: list[dict[str, str]] | str
    chosen: list[dict[str, str]] | str
    rejected: list[dict[str, str]] | str


def message_problems(value: Any, name: str) -> list[tuple[str, str]]:
    """Problems of a field that must be a non-empty string or a list of chat messages."""
    if isinstance(value, str):
        return [] if value else [(name, "is an empty string; give the text")]
    if not isinstance(value, list) or not value:
        return [
            (name, f"must be a string or a non-empty list of {{role, content}} messages, got {type(value).__name__}")
        ]
    problems = []
    for i, msg in enumerate(value):
        where = f"{name}[{i}]"
        if not isinstance(msg, dict):
            problems.append((where, f"must be a {{role, content}} object, got {type(msg).__name__}"))
        elif msg.get("role") not in ROLES:
            problems.append((f"{where}.role", f"is {msg.get('role')!r}; use one of {list(ROLES)}"))
        elif not isinstance(msg.get("content"), str):
            problems.append((f"{where}.content", "must be a string (the message text)"))
    return problems


def prompt_row_problems(row: Any) -> list[tuple[str, str]]:
    """Every problem of a verl-style prompt row, as (field, what to do)."""
    if not isinstance(row, dict):
        return [("<row>", f"must be a JSON object, got {type(row).__name__}")]
    if "prompt" in row:
        problems = message_problems(row["prompt"], "prompt")
    else:
        problems = [("prompt", "is missing; add the chat messages (or a plain string) to answer")]
    reward = row.get("reward_model")
    if not isinstance(reward, dict) or reward.get("ground_truth") is None:
        problems.append(("reward_model.ground_truth", 'is missing; add "reward_model": {"ground_truth": "<answer>"}'))
    elif not isinstance(reward["ground_truth"], GROUND_TRUTH_TYPES):
        problems.append(("reward_model.ground_truth", "must be a string, number or list"))
    if row.get("data_source") is not None and not isinstance(row["data_source"], str):
        problems.append(("data_source", "must be a string naming where the row came from"))
    if row.get("extra_info") is not None and not isinstance(row["extra_info"], dict):
        problems.append(("extra_info", "must be an object (or left out)"))
    return problems


def dpo_row_problems(row: Any) -> list[tuple[str, str]]:
    """Every problem of a DPO row (prompt, chosen, rejected), as (field, what to do)."""
    if not isinstance(row, dict):
        return [("<row>", f"must be a JSON object, got {type(row).__name__}")]
    problems = []
    for name in ("prompt", "chosen", "rejected"):
        if name not in row:
            problems.append((name, "is missing; DPO rows need prompt, chosen and rejected"))
        else:
            problems += message_problems(row[name], name)
    return problems


def _raise_first(ref: RowRef, problems: list[tuple[str, str]]) -> None:
    if problems:
        name, fix = problems[0]
        more = f" (and {len(problems) - 1} more problems in this row)" if len(problems) > 1 else ""
        raise DatasetError(f"{ref}: field '{name}' {fix}{more}")


def validate_prompt_row(row: Any, ref: RowRef) -> PromptRow:
    """A checked `PromptRow`, or `DatasetError` naming file, line, field and fix."""
    _raise_first(ref, prompt_row_problems(row))
    return PromptRow(
        ref=ref,
        prompt=row["prompt"],
        ground_truth=row["reward_model"]["ground_truth"],
        data_source=row.get("data_source"),
        extra_info=row.get("extra_info") or {},
    )


def validate_dpo_row(row: Any, ref: RowRef) -> PreferenceRow:
    """A checked `PreferenceRow`, or `DatasetError` naming file, line, field and fix."""
    _raise_first(ref, dpo_row_problems(row))
    return PreferenceRow(ref=ref, prompt=row["prompt"], chosen=row["chosen"], rejected=row["rejected"])
