"""`EvalSample`: one evaluated response with its score, as plain data (JSON-ready).

`from_group(group, prompt_index, mode)` turns a generated `Group` into one record per
sample; the reward client fills `reward`, `components`, `score_ok` and `score_error`; the
accuracy rule (correct.py) fills `correct`. An episode (a task with an environment) keeps its
environment reward: `with_environment_reward` makes it the value of the run's `environment`
components (the reward service, scoring an evaluated text, has no episode to read it from). `finish_reason` is "stop", "length", "abort"
or "unspecified". A failed score keeps `reward` NaN (never 0); `as_json()` writes it null.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from meshrl.api.common.v1 import common_pb2

INT32_BYTES = 4


def finish_reason_name(value: int) -> str:
    return common_pb2.FinishReason.Name(value).removeprefix("FINISH_REASON_").lower()


def status_name(value: int) -> str:
    return common_pb2.ScoreStatus.Name(value).removeprefix("SCORE_STATUS_")


@dataclass
class EvalSample:
    prompt_index: int
    mode: str  # "greedy" | "sampled"
    group_id: str
    sample_index: int
    prompt: str
    response: str
    ground_truth: str
    data_source: str
    num_tokens: int
    finish_reason: str
    policy_version: int
    reward: float = math.nan
    components: dict[str, dict] = field(default_factory=dict)  # name → {"value", "status"}
    score_ok: bool = False
    score_error: str = ""
    correct: bool = False
    env_reward: float | None = None  # an episode's environment reward (None: none given, or single turn)
    extra_json: str = field(default="", repr=False)  # the row's extra_info, for rules that read it (reasoning_gym)

    @property
    def score_id(self) -> str:
        return f"{self.group_id}/{self.sample_index}"

    def as_json(self) -> dict:
        row = asdict(self)
        del row["extra_json"]  # the row's own data, not what the evaluation found
        row["reward"] = self.reward if math.isfinite(self.reward) else None
        return row


def from_group(group: common_pb2.Group, prompt_index: int, mode: str) -> list[EvalSample]:
    task = group.task
    return [
        EvalSample(
            prompt_index=prompt_index,
            mode=mode,
            group_id=group.group_id,
            sample_index=s.index,
            prompt=task.prompt_text,
            response=s.response_text,
            ground_truth=task.ground_truth,
            data_source=task.data_source,
            num_tokens=len(s.response_token_ids) // INT32_BYTES,
            finish_reason=finish_reason_name(s.finish_reason),
            policy_version=s.policy_version,
            env_reward=s.env_reward if s.has_env_reward else None,
            extra_json=task.extra_json,
        )
        for s in group.samples
    ]


def with_environment_reward(samples: list[EvalSample], names: tuple[str, ...]) -> None:
    """Each `environment` component's value is the episode's env reward (ERROR when it has none)."""
    for s in samples:
        for name in names:
            ok = s.env_reward is not None and math.isfinite(s.env_reward)
            s.components[name] = {"value": s.env_reward if ok else None, "status": "OK" if ok else "ERROR"}
