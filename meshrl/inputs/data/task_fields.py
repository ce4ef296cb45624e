"""The PromptTask fields a dataset row fills for the reward path (nothing of the row is lost).

`task_fields(row)` gives the keyword arguments of `common_pb2.PromptTask` that carry the row
to reward services: `ground_truth` (the text built-in rules compare: a string as is, any
other type as JSON, never a Python repr), `ground_truth_json` (JSON, any type),
`data_source`, `extra_json` (the row's `extra_info` object) and `prompt_messages` (the chat
messages; a plain-string prompt becomes one user message). Used by the learner's feeder.
"""

from __future__ import annotations

import json
from typing import Any

from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.data.rows import PromptRow


def to_json(value: Any) -> str:
    # default=str: a parquet row may hold a date or decimal; its text beats a crash mid-run.
    return json.dumps(value, ensure_ascii=False, default=str)


def ground_truth_text(value: Any) -> str:
    """What rules compare against: "" for none, a string as is, anything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else to_json(value)


def prompt_messages(prompt: list[dict[str, str]] | str) -> list[common_pb2.ChatMessage]:
    chat = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
    return [common_pb2.ChatMessage(role=m["role"], content=m["content"]) for m in chat]


def task_fields(row: PromptRow) -> dict[str, Any]:
    return dict(
        ground_truth=ground_truth_text(row.ground_truth),
        ground_truth_json="" if row.ground_truth is None else to_json(row.ground_truth),
        data_source=row.data_source or "",
        extra_json=to_json(row.extra_info or {}),
        prompt_messages=prompt_messages(row.prompt),
    )
