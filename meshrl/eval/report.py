"""An evaluation's result for people (an aligned table) and for files (one JSON document).

    metric                      value
    eval/n                      64
    eval/accuracy               0.4219
    ...

The JSON holds what was evaluated (source, step, data file, model dir), the metrics, the
eval and reward config used, and every sample (greedy and sampled) with its score.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from meshrl.config.schema import RunConfig
from meshrl.eval.evaluator import EvalResult


def format_value(key: str, value: float) -> str:
    if key in ("eval/n", "eval/score_errors") and float(value).is_integer():
        return str(int(value))
    return f"{value:.4f}" if math.isfinite(value) else str(value)


def metrics_table(metrics: dict[str, float]) -> str:
    rows = [("metric", "value")] + [(k, format_value(k, v)) for k, v in metrics.items()]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def result_document(
    result: EvalResult, cfg: RunConfig, *, source: str, step: int | None, data: str, model_dir: str
) -> dict:
    return {
        "source": source,
        "step": step,
        "data": data,
        "model_dir": model_dir,
        "metrics": result.metrics,
        "eval": cfg.eval.model_dump(mode="json"),
        "reward_components": [c.model_dump(mode="json") for c in cfg.reward.components],
        "samples": [s.as_json() for s in result.samples],
    }


def write_result(path: str | Path, document: dict) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return path
