"""reasoning-gym's handlers script, served by the library worker (meshrl/transport/library:
child.py runs it under the reasoning-gym venv's python and calls its functions over JSON lines).
It imports only the standard library and reasoning_gym (never meshrl), so meshrl's own .venv
never needs the library.

    generate(tasks=[{"name": "leg_counting", "weight": 1, "config": {...}}], n=8, seed=0, prompt="direct")
        -> {"entries": [{"task": ..., "config": {...}, "entry": {...}}], "system_prompt": "..."}
    score(items=[{"answer": "12" | None, "task": ..., "config": {...}, "entry": {...}}])
        -> [1.0, 0.0, 0.25, {"error": "why"}, ...]   # score_answer's values as given, or why not

A request the user can fix raises BadRequest, one line saying what is wrong and what is allowed.
Several tasks are reasoning-gym's own CompositeDataset (its weighted draw per index), one task
its dataset alone; `seed` and `size` come from the call, never from a task's config.
Run (by meshrl.inputs.data.reasoning_gym.worker, or by hand):
    .venv-adapters/reasoning_gym/bin/python meshrl/transport/library/child.py meshrl/inputs/data/reasoning_gym/handler.py
"""

import dataclasses
import difflib
import json
import math

import reasoning_gym
from reasoning_gym.composite import CompositeConfig, CompositeDataset, DatasetSpec
from reasoning_gym.factory import DATASETS
from reasoning_gym.utils import SYSTEM_PROMPTS

RESERVED_KEYS = ("seed", "size")  # set by the request (--seed, --n), never per task


class BadRequest(ValueError):
    """A request the user can fix: the message says what is wrong and what is allowed."""


def check_name(name: str) -> None:
    if name not in DATASETS:
        close = difflib.get_close_matches(name, DATASETS, n=3, cutoff=0.5)
        hint = (
            f"closest: {', '.join(close)}"
            if close
            else f"{len(DATASETS)} tasks, e.g. {', '.join(sorted(DATASETS)[:5])}"
        )
        raise BadRequest(f"unknown reasoning-gym task {name!r}; {hint}")


def check_config(name: str, config: dict) -> None:
    allowed = [f.name for f in dataclasses.fields(DATASETS[name][1]) if f.name not in RESERVED_KEYS]
    for key in config:
        if key in RESERVED_KEYS:
            raise BadRequest(f"task {name}: {key} is set by --{'n' if key == 'size' else key}, not by --config")
        if key not in allowed:
            raise BadRequest(f"task {name} has no config key {key!r}; its keys: {', '.join(allowed)}")


def build(name: str, config: dict, seed: int, size: int):
    """The task's own dataset; its config's own checks (validate()) as one BadRequest line."""
    check_name(name)
    check_config(name, config)
    try:
        return reasoning_gym.create_dataset(name, seed=seed, size=size, **config)
    except (AssertionError, TypeError, ValueError) as err:
        raise BadRequest(f"task {name}: config {json.dumps(config)} refused by reasoning-gym: {err}") from None


def dataset_for(tasks: list[dict], n: int, seed: int):
    """One task: its dataset; several: reasoning-gym's CompositeDataset with their weights."""
    for task in tasks:
        build(task["name"], task.get("config") or {}, seed, n)  # each checked on its own first
    if len(tasks) == 1:
        return build(tasks[0]["name"], tasks[0].get("config") or {}, seed, n)
    specs = [DatasetSpec(t["name"], float(t.get("weight", 1.0)), dict(t.get("config") or {})) for t in tasks]
    try:
        return CompositeDataset(CompositeConfig(size=n, seed=seed, datasets=specs))
    except (AssertionError, ValueError) as err:
        raise BadRequest(f"tasks {[t['name'] for t in tasks]}: {err}") from None


def generate(tasks: list[dict], n: int, seed: int, prompt: str = "direct") -> dict:
    if prompt not in SYSTEM_PROMPTS:
        raise BadRequest(f"unknown prompt {prompt!r}; reasoning-gym's prompts: {', '.join(SYSTEM_PROMPTS)}")
    dataset = dataset_for(tasks, int(n), int(seed))
    configs = {t["name"]: t.get("config") or {} for t in tasks}
    entries = []
    for i in range(int(n)):
        entry = dataset[i]
        task = entry["metadata"]["source_dataset"]
        entries.append({"task": task, "config": configs[task], "entry": entry})
    return {"entries": entries, "system_prompt": SYSTEM_PROMPTS[prompt]}


_SCORERS: dict[str, object] = {}


def scorer(task: str, config: dict):
    """The dataset's own score_answer, the dataset rebuilt from the row's task and config (cached)."""
    key = json.dumps([task, config], sort_keys=True)
    if key not in _SCORERS:
        _SCORERS[key] = build(task, config, 0, 1).score_answer
    return _SCORERS[key]


def score_one(item: dict):
    """score_answer's value as given; {"error": why} when it raised or gave no finite number."""
    try:
        value = scorer(item["task"], item.get("config") or {})(item.get("answer"), item["entry"])
    except BadRequest as err:
        return {"error": str(err)}
    except Exception as err:  # the task's scorer failed on this entry: that item's error, not the batch's
        return {"error": f"score_answer raised {type(err).__name__}: {err}"}
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return {"error": f"score_answer gave {value!r}, not a finite number"}
    return float(value)


def score(items: list[dict]) -> list:
    return [score_one(item) for item in items]
