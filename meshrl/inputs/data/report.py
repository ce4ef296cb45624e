"""What a prompt dataset holds, computed before training starts.

Printed by the learner at start-up so a bad file or a too-small `max_prompt_tokens` shows up
in the first second of a run, not as a crash an hour later.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class DatasetReport:
    file: str
    rows: int  # rows read from the file
    kept: int  # rows the run will sample from
    max_prompt_tokens: int
    over_limit: int  # rows whose prompt has more tokens than max_prompt_tokens
    over_limit_examples: list[str] = field(default_factory=list)  # "file line 7: 300 tokens"
    invalid: int = 0  # rows dropped for a problem (only when on_invalid="drop")
    invalid_fields: dict[str, int] = field(default_factory=dict)  # field → rows with a problem
    missing_optional: dict[str, int] = field(default_factory=dict)  # field → rows without it
    prompt_tokens: dict[str, float] = field(default_factory=dict)  # min/mean/p95/max, valid rows
    response_tokens: dict[str, dict] = field(default_factory=dict)  # DPO: chosen/rejected stats

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        t = self.prompt_tokens
        lines = [
            f"dataset {self.file}: {self.rows} rows, {self.kept} kept",
            f"  prompt tokens: min {t.get('min')} mean {t.get('mean')} p95 {t.get('p95')} max {t.get('max')}",
            f"  over max_prompt_tokens={self.max_prompt_tokens}: {self.over_limit}",
        ]
        for name, t in self.response_tokens.items():
            lines.append(
                f"  {name} tokens: min {t.get('min')} mean {t.get('mean')} p95 {t.get('p95')} max {t.get('max')}"
            )
        if self.invalid:
            lines.append(f"  invalid rows dropped: {self.invalid} {self.invalid_fields}")
        if any(self.missing_optional.values()):
            lines.append(f"  rows without optional fields: {self.missing_optional}")
        return "\n".join(lines)


def length_stats(lengths: np.ndarray) -> dict[str, float]:
    """min, mean, p95 (linear interpolation, numpy's default) and max of token lengths."""
    if lengths.size == 0:
        return {}
    return {
        "min": int(lengths.min()),
        "mean": round(float(lengths.mean()), 2),
        "p95": round(float(np.percentile(lengths, 95)), 2),
        "max": int(lengths.max()),
    }


def missing_optional_counts(rows) -> dict[str, int]:
    """How many validated rows lack `data_source` / `extra_info`."""
    counts = Counter()
    for row in rows:
        counts["data_source"] += row.data_source is None
        counts["extra_info"] += not row.extra_info
    return {"data_source": counts["data_source"], "extra_info": counts["extra_info"]}
