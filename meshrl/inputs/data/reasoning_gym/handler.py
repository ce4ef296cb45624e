"""reasoning-gym's side of meshrl: a child process, run by the reasoning-gym venv's python, that
answers one JSON request per stdin line with one JSON reply per stdout line. It imports only the
standard library and reasoning_gym (never meshrl), so meshrl's own .venv never needs the library.

    request  {"op": "generate", "tasks": [{"name": "leg_counting", "weight": 1, "config": {...}}],
              "n": 8, "seed": 0, "prompt": "direct"}
    reply    {"ok": true, "result": {"entries": [{"task": ..., "config": {...}, "entry": {...}}],
              "system_prompt": "..."}}
    request  {"op": "score", "items": [{"answer": "12" | null, "task": ..., "config": {...}, "entry": {...}}]}
    reply    {"ok": true, "result": [1.0, 0.0, 0.25, {"error": "why"}, ...]}   # score_answer's values, as given
    any bad request: {"ok": false, "error": "one line saying what is wrong and what is allowed"}

Several tasks are reasoning-gym's own CompositeDataset (its weighted draw per index), one task
its dataset alone; `seed` and `size` come from the request, never from a task's config.
Run (by meshrl.inputs.data.reasoning_gym.worker, or by hand):
    .venv-adapters/reasoning_gym/bin/python meshrl/inputs/data/reasoning_gym/handler.py
"""

import dataclasses
import difflib
import json
import sys

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


def generate(request: dict) -> dict:
    tasks, n, seed = request["tasks"], int(request["n"]), int(request["seed"])
    prompt = request.get("prompt", "direct")
    if prompt not in SYSTEM_PROMPTS:
        raise BadRequest(f"unknown prompt {prompt!r}; reasoning-gym's prompts: {', '.join(SYSTEM_PROMPTS)}")
    dataset = dataset_for(tasks, n, seed)
    configs = {t["name"]: t.get("config") or {} for t in tasks}
    entries = []
    for i in range(n):
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
    """score_answer's value as given (NaN included: meshrl judges it); {"error": why} when it
    raised or gave no number."""
    try:
        value = scorer(item["task"], item.get("config") or {})(item.get("answer"), item["entry"])
    except BadRequest as err:
        return {"error": str(err)}
    except Exception as err:  # the task's scorer failed on this entry: that item's error, not the batch's
        return {"error": f"score_answer raised {type(err).__name__}: {err}"}
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return {"error": f"score_answer returned {value!r} ({type(value).__name__}), not a number"}
    return float(value)


def score(request: dict) -> list:
    return [score_one(item) for item in request["items"]]


OPS = {"generate": generate, "score": score, "ping": lambda request: True}


def answer(line: str) -> dict:
    try:
        request = json.loads(line)
        op = OPS.get(request.get("op"))
        if op is None:
            raise BadRequest(f"unknown op {request.get('op')!r}; ops: {', '.join(OPS)}")
        return {"ok": True, "result": op(request)}
    except BadRequest as err:
        return {"ok": False, "error": str(err)}
    except (KeyError, TypeError, ValueError) as err:  # a malformed request: meshrl's bug, said plainly
        return {"ok": False, "error": f"malformed request ({type(err).__name__}: {err})"}


def main() -> None:
    for line in sys.stdin:
        if line.strip():
            sys.stdout.write(json.dumps(answer(line)) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
