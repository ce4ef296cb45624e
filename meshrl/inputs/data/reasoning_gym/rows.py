"""reasoning-gym tasks as verl-style prompt rows (what `meshrl data reasoning-gym` writes):

    {"prompt": [{"role": "system", "content": <reasoning-gym's system prompt, "direct" by default>},
                {"role": "user", "content": <the entry's question>}],
     "reward_model": {"style": "rule", "ground_truth": <the entry's answer>},
     "data_source": "reasoning_gym/leg_counting",
     "extra_info": {"index": 0, "reasoning_gym": {"task": "leg_counting", "config": {...}, "entry": {...}}}}

`extra_info.reasoning_gym` is what the reward rule `reasoning_gym` needs: the task and config to
rebuild its dataset, and the whole entry (answer and metadata) its score_answer reads. The
system prompts all ask for the answer inside `<answer>...</answer>` (answer.py reads it).

`shots=K` puts K worked examples before each question, as conversation turns (the example's
question, then `<answer>its answer</answer>` from the assistant): a small model rarely writes
the tag from the instruction alone but copies it from turns it has seen (measured:
docs/benchmarks.md, "reasoning-gym"). They are the K entries drawn after the file's own n (the
same tasks and settings, never one of its rows) and the same in every row, so the prompts share
their prefix.

`task_specs("a,b", "3,1", ["a.k=2"])` turns the command's options into the handler's task list:
names (no repeats), positive weights (one per name), and `KEY=VALUE` settings (`NAME.KEY=VALUE`
when there are several tasks), each VALUE read as YAML (`3` a number, `true` a bool, `[1, 2]` a list).
"""

from __future__ import annotations

import json
import math

import yaml

from meshrl.inputs.data.reasoning_gym.answer import TAG
from meshrl.inputs.data.reasoning_gym.worker import generate

MAX_SHOTS = 8


def task_names(tasks: str) -> list[str]:
    names = [t.strip() for t in tasks.split(",") if t.strip()]
    if not names:
        raise ValueError("--task names no task; give NAME[,NAME...], e.g. --task leg_counting")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"--task names {', '.join(repeated)} twice; name each task once (weights: --weights)")
    return names


def task_weights(weights: str | None, names: list[str]) -> list[float]:
    if weights is None:
        return [1.0] * len(names)
    try:
        values = [float(w) for w in weights.split(",")]
    except ValueError:
        raise ValueError(f"--weights {weights!r}: give numbers separated by commas, e.g. 3,1") from None
    if len(values) != len(names) or not all(math.isfinite(w) and w > 0 for w in values):
        raise ValueError(f"--weights {weights!r}: give {len(names)} positive numbers, one per --task name, e.g. 3,1")
    return values


def parse_setting(setting: str, names: list[str]) -> tuple[str, str, object]:
    """`[NAME.]KEY=VALUE` -> (task name, key, value read as YAML)."""
    target, sep, raw = setting.partition("=")
    if not sep or not target.strip():
        raise ValueError(f"--config {setting!r}: write KEY=VALUE (NAME.KEY=VALUE with several tasks)")
    name, dot, key = target.strip().rpartition(".")
    if not dot:
        if len(names) > 1:
            raise ValueError(f"--config {setting!r}: with several tasks name the task, e.g. {names[0]}.{key}={raw}")
        name = names[0]
    if name not in names:
        raise ValueError(f"--config {setting!r}: {name!r} is not one of the --task names ({', '.join(names)})")
    return name, key, yaml.safe_load(raw)


def task_specs(tasks: str, weights: str | None = None, settings: list[str] | None = None) -> list[dict]:
    names = task_names(tasks)
    configs: dict[str, dict] = {name: {} for name in names}
    for setting in settings or []:
        name, key, value = parse_setting(setting, names)
        configs[name][key] = value
    return [
        {"name": n, "weight": w, "config": configs[n]} for n, w in zip(names, task_weights(weights, names), strict=True)
    ]


def shot_turns(items: list[dict]) -> list[dict]:
    """Worked examples as turns: each question, then its answer in the tag the rule reads."""
    turns = []
    for item in items:
        entry = item["entry"]
        turns.append({"role": "user", "content": entry["question"]})
        turns.append({"role": "assistant", "content": f"<{TAG}>{entry['answer']}</{TAG}>"})
    return turns


def to_row(index: int, item: dict, head: list[dict]) -> dict:
    """One row: `head` (the system prompt and any worked examples), then the entry's question."""
    entry = item["entry"]
    answer = entry["answer"]
    return {
        "prompt": [*head, {"role": "user", "content": entry["question"]}],
        "reward_model": {"style": "rule", "ground_truth": answer if isinstance(answer, str) else json.dumps(answer)},
        "data_source": f"reasoning_gym/{item['task']}",
        "extra_info": {"index": index, "reasoning_gym": item},
    }


def reasoning_gym_rows(
    python: str, specs: list[dict], *, n: int, seed: int, prompt: str = "direct", shots: int = 0
) -> list[dict]:
    """`n` rows drawn by reasoning-gym under `python` (ValueError, one line, when it refuses a
    name or setting; LaunchError when its child could not run)."""
    if not 0 <= shots <= MAX_SHOTS:
        raise ValueError(f"--shots {shots}: give 0..{MAX_SHOTS} worked examples")
    result = generate(python, specs, n=n + shots, seed=seed, prompt=prompt)
    entries = result["entries"]
    head = [{"role": "system", "content": result["system_prompt"]}, *shot_turns(entries[n:])]
    return [to_row(i, item, head) for i, item in enumerate(entries[:n])]
