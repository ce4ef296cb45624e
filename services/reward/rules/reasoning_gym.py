"""`reasoning_gym`: a reasoning-gym task's own score for the response, partial credit kept as the
task gives it (e.g. the default scorer's len(answer)/len(response) when the answer is inside a
longer reply).

    reward:
      components:
        - {name: correct, kind: reasoning_gym}          # params: python (the venv), timeout_s

The answer is the text inside the response's last `<answer>...</answer>` pair
(meshrl/inputs/data/reasoning_gym/answer.py, reasoning-gym's convention: the rows of
`meshrl data reasoning-gym` ask for it); none is passed to score_answer as no answer (0.0 for
every task), and detail `answered` says which. The score comes from the task's dataset rebuilt
from the row's `extra_info.reasoning_gym` (task, config, entry) in a scorer child under the
reasoning-gym venv's python (handler.py served by the library worker; one per reward replica, started when the service
starts, restarted after it died or passed `timeout_s`). A row without that block, a scorer that
raised, or a value that is NaN or no number is that item's ERROR with the reason (its group
then goes by on_failure: dropped by default), never a crash nor a silent 0.
"""

from __future__ import annotations

import json
import math
import threading

from meshrl.config import ConfigError
from meshrl.config.reward_rules import ReasoningGymParams
from meshrl.errors import LaunchError
from meshrl.inputs.data.reasoning_gym.answer import extract_answer
from meshrl.inputs.data.reasoning_gym.worker import HandlerError, ScorerChild, checked_python
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.types import ItemScore, RewardItem, Status, failed, ok

NO_TASK = (
    "the row's extra_info has no reasoning_gym block (task, config, entry); "
    "make the rows with `meshrl data reasoning-gym`"
)
_SCORERS: dict[str, ScorerChild] = {}
_LOCK = threading.Lock()


def scorer(params: ReasoningGymParams) -> ScorerChild:
    """This process's scorer child for the params' python (ConfigError when it is not there)."""
    try:
        python = checked_python(params.python)
    except LaunchError as err:
        raise ConfigError(f"reward kind reasoning_gym, params.python: {err}") from None
    with _LOCK:
        if python not in _SCORERS:
            _SCORERS[python] = ScorerChild(python)
        return _SCORERS[python]


def warm_scorer(params: ReasoningGymParams) -> None:
    """Start the child and import the library before the first group (a ConfigError if it cannot)."""
    try:
        scorer(params).call("score", {"items": []}, timeout_s=params.timeout_s)
    except HandlerError as err:
        raise ConfigError(f"reward kind reasoning_gym could not start its scorer: {err}") from None


def shutdown_scorers() -> None:
    with _LOCK:
        for child in _SCORERS.values():
            child.close()
        _SCORERS.clear()


def task_of(item: RewardItem) -> dict | None:
    try:
        block = json.loads(item.extra_json or "{}").get("reasoning_gym")
    except (ValueError, AttributeError):
        return None
    ok_block = isinstance(block, dict) and isinstance(block.get("task"), str) and isinstance(block.get("entry"), dict)
    return block if ok_block else None


def to_score(value, task: str, answered: bool) -> ItemScore:
    """The child's value for one item: a finite number is the score; anything else an ERROR."""
    if isinstance(value, dict) and "error" in value:
        return failed(Status.ERROR, f"reasoning-gym task {task}: {value['error']}")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return failed(Status.ERROR, f"reasoning-gym task {task}: score_answer gave {value!r}, not a finite number")
    return ok(value, answered=float(answered))


@register_reward("reasoning_gym", params=ReasoningGymParams)
def reasoning_gym(items: list[RewardItem], params: ReasoningGymParams) -> list[ItemScore]:
    tasks = [task_of(it) for it in items]
    asked = [i for i, task in enumerate(tasks) if task is not None]
    answers = {i: extract_answer(items[i].response) for i in asked}
    scores = [failed(Status.ERROR, NO_TASK)] * len(items)
    if not asked:
        return scores
    request = [{**tasks[i], "answer": answers[i]} for i in asked]
    try:
        values = scorer(params).call("score", {"items": request}, timeout_s=params.timeout_s)
    except HandlerError as err:  # died or stuck: these items fail, the next batch gets a fresh child
        return [failed(Status.ERROR, f"reasoning-gym scorer: {err}") if t else s for t, s in zip(tasks, scores)]
    for i, value in zip(asked, values, strict=True):
        scores[i] = to_score(value, tasks[i]["task"], answers[i] is not None)
    return scores
