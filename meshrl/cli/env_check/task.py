"""The task the kit resets episodes with: a generic arithmetic row, or the user's own
(`--task FILE`: one dataset row as JSON, verl style: prompt, reward_model.ground_truth,
data_source, extra_info), for environments that need particular fields."""

from __future__ import annotations

import json
from pathlib import Path

from meshrl.api.env.v1 import env_pb2
from meshrl.config import ConfigError

DEFAULT_ROW = {
    "prompt": [{"role": "user", "content": "What is 3+4? Answer with a number."}],
    "reward_model": {"ground_truth": "7"},
    "data_source": "meshrl-env-check",
    "extra_info": {},
}


def _messages(prompt) -> list[env_pb2.ChatMessage]:
    if isinstance(prompt, str):
        return [env_pb2.ChatMessage(role="user", content=prompt)]
    return [env_pb2.ChatMessage(role=m["role"], content=m["content"]) for m in prompt]


def task_request(row: dict, environment: str) -> env_pb2.ResetRequest:
    truth = (row.get("reward_model") or {}).get("ground_truth")
    return env_pb2.ResetRequest(
        run_id="",
        environment=environment,
        prompt_messages=_messages(row.get("prompt", "")),
        ground_truth_json="" if truth is None else json.dumps(truth),
        data_source=row.get("data_source", ""),
        extra_json=json.dumps(row.get("extra_info") or {}),
        seed=1,
        group_seed=1,
    )


def load_task(path: str | None, environment: str) -> env_pb2.ResetRequest:
    """The Reset template; ConfigError naming the file and what is wrong."""
    if path is None:
        return task_request(DEFAULT_ROW, environment)
    try:
        row = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as err:
        raise ConfigError(f"--task {path}: cannot read it ({err.strerror})") from None
    except ValueError as err:
        raise ConfigError(f"--task {path}: not JSON ({err}); give one dataset row as a JSON object") from None
    if not isinstance(row, dict) or "prompt" not in row:
        raise ConfigError(f"--task {path}: give one dataset row as a JSON object with at least 'prompt'")
    try:
        return task_request(row, environment)
    except (KeyError, TypeError) as err:
        raise ConfigError(f"--task {path}: prompt must be text or a list of {{role, content}} ({err})") from None
