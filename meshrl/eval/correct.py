"""The accuracy rule: when an evaluated sample counts as correct.

With `correct_component` set, that reward component's raw value (before its weight) must be
≥ `threshold`; with it None, the total reward (the weighted sum the learner trains on) must
be. A sample without that value (its score failed, or the component is missing) is not
correct and counts as a score error. See meshrl/config/eval.py for the config keys.
"""

from __future__ import annotations

import math

from meshrl.eval.records import EvalSample


def judged_value(sample: EvalSample, component: str | None) -> float | None:
    """The number the rule compares, or None when the score for it failed."""
    if component is None:
        return sample.reward if sample.score_ok and math.isfinite(sample.reward) else None
    entry = sample.components.get(component)
    if entry is None or entry.get("status") != "OK" or entry.get("value") is None:
        return None
    return float(entry["value"])


def is_correct(sample: EvalSample, component: str | None, threshold: float) -> bool:
    value = judged_value(sample, component)
    return value is not None and value >= threshold


def judge(samples: list[EvalSample], component: str | None, threshold: float) -> int:
    """Set `correct` on every sample; return how many had no value to judge (score errors)."""
    errors = 0
    for s in samples:
        s.correct = is_correct(s, component, threshold)
        errors += judged_value(s, component) is None
    return errors
