"""`SampleWriter`: generations with their rewards, appended to RUN_DIR/samples.jsonl.

For people to read: open the file and check that what the reward calls good is good (the
first place reward hacking shows). One JSON object per line:

    {"step": 10, "split": "train" | "eval", "group_id": "...", "sample_index": 0,
     "prompt": "...", "response": "...", "ground_truth": "7", "reward": 1.0,
     "components": {"math": {"value": 1.0, "status": "OK"}}, "finish_reason": "stop",
     "num_tokens": 12, "policy_version": 3}        # eval rows add "mode": "greedy" | "sampled"

A multi-turn episode's row (train) adds "environment", "env_reward", "response_tokens" (every
response token, observations included) and "turns": one object per model turn, {"index",
"text", "tokens": [start, end, observation end] (the model wrote [start, end), the observation
fills [end, observation end): the loss mask's hole), "tool_calls": [{"name", "arguments",
"error"}], "observation", "observation_truncated", "reward" (null when the environment gave
none), "finish_reason", "done", "env_latency_s"} and, when the Step's info gave them, "reward_details"
(its `reward_details` object: the parts of the turn's reward by name, e.g. a verifiers
rubric's functions); its "response" is the final turn and
"num_tokens" counts the model's own tokens. With a tokenizer it adds "prompt_read": the prompt
as the model read it (the group's prompt tokens decoded: tools block and first observation).

`write_train(step, groups)` takes the step's trained `Group`s (reward already filled in);
`write_eval(step, samples)` takes an evaluation's `EvalSample`s. Each call writes `k` rows
(default `eval.samples_per_step`; 0 writes nothing) drawn uniformly without replacement,
with a generator seeded by (seed, step, split), so a rerun picks the same rows. A NaN
reward (its score failed) is written as null. The response text is the sample's
`response_text`, or its token ids decoded with `tokenizer` when the text is empty.

Simplification: the file grows without rotation (k rows per step).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import numpy as np

from meshrl import run_layout as layout
from meshrl.api.common.v1 import common_pb2
from meshrl.episodes import INT32_BYTES, model_token_count
from meshrl.eval.records import EvalSample, finish_reason_name, status_name
from meshrl.transport.bus.codec import unpack_int32

FILE_NAME = layout.SAMPLES
SPLITS = {"train": 0, "eval": 1}


def finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


def sample_row(step: int, group: common_pb2.Group, s: common_pb2.Sample, tokenizer=None) -> dict:
    """The samples.jsonl row of one trained sample; an episode's adds its turns."""
    text = s.response_text
    if not text and s.response_token_ids and tokenizer is not None:
        text = tokenizer.decode(unpack_int32(s.response_token_ids).tolist(), skip_special_tokens=True)
    row = {
        "step": step,
        "split": "train",
        "group_id": group.group_id,
        "sample_index": s.index,
        "prompt": group.task.prompt_text,
        "response": text,
        "ground_truth": group.task.ground_truth,
        "reward": finite_or_none(s.reward),
        "components": {
            c.name: {"value": finite_or_none(c.value), "status": status_name(c.status)} for c in s.reward_components
        },
        "finish_reason": finish_reason_name(s.finish_reason),
        "num_tokens": model_token_count(s),
        "policy_version": s.policy_version,
    }
    return row | episode_fields(group, s) | prompt_read(group, tokenizer) if s.turns else row


def prompt_read(group: common_pb2.Group, tokenizer) -> dict:
    """{"prompt_read": text}: an episode's prompt as the model read it, decoded from the
    group's prompt tokens (the rollout's rendering: the tools block and the environment's
    first observation included, which `prompt`, the learner's rendering, lacks); {} without
    a tokenizer."""
    if tokenizer is None or not group.task.prompt_token_ids:
        return {}
    ids = unpack_int32(group.task.prompt_token_ids).tolist()
    return {"prompt_read": tokenizer.decode(ids, skip_special_tokens=False)}


def episode_fields(group: common_pb2.Group, s: common_pb2.Sample) -> dict:
    """A multi-turn sample's environment, environment reward and turns (the dashboard's
    episode view): each turn's text, tool calls, observation and reward."""
    return {
        "environment": group.task.environment,
        "env_reward": finite_or_none(s.env_reward) if s.has_env_reward else None,
        "response_tokens": len(s.response_token_ids) // INT32_BYTES,  # num_tokens + the observations'
        "turns": [turn_row(t) for t in s.turns],
    }


def turn_row(t: common_pb2.Turn) -> dict:
    """`tokens`: [start, end, observation end) in the response: the model wrote [start, end),
    the observation is [end, observation end) (loss mask 0; empty when there is none)."""
    return {
        "index": t.index,
        "text": t.text,
        "tokens": [t.token_start, t.token_end, max(t.observation_end, t.token_end)],
        "tool_calls": [{"name": c.name, "arguments": c.arguments_json, "error": c.error} for c in t.tool_calls],
        "observation": t.observation_text,
        "observation_truncated": t.observation_truncated,
        "reward": finite_or_none(t.reward) if t.HasField("reward") else None,
        "finish_reason": finish_reason_name(t.finish_reason),
        "done": t.done,
        "env_latency_s": t.env_latency_s,
    } | reward_details(t.info_json)


def reward_details(info_json: str) -> dict:
    """{"reward_details": {name: value}} when a Step's info names the parts of its reward; else {}."""
    try:
        info = json.loads(info_json) if info_json else {}
    except ValueError:
        return {}
    details = info.get("reward_details") if isinstance(info, dict) else None
    if not isinstance(details, dict):
        return {}
    numbers = {str(k): float(v) for k, v in details.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"reward_details": {k: finite_or_none(v) for k, v in numbers.items()}}


def eval_row(step: int, s: EvalSample) -> dict:
    """The samples.jsonl row of one evaluated sample."""
    return {
        "step": step,
        "split": "eval",
        "mode": s.mode,
        "group_id": s.group_id,
        "sample_index": s.sample_index,
        "prompt": s.prompt,
        "response": s.response,
        "ground_truth": s.ground_truth,
        "reward": finite_or_none(s.reward),
        "components": s.components,
        "finish_reason": s.finish_reason,
        "num_tokens": s.num_tokens,
        "policy_version": s.policy_version,
        "correct": s.correct,
    }


class SampleWriter:
    def __init__(self, path: str | Path, k: int = 4, *, seed: int = 0, tokenizer=None):
        self.path, self.k, self.seed, self.tokenizer = Path(path), k, seed, tokenizer

    @classmethod
    def for_run(cls, run_dir: str | Path, k: int, *, seed: int = 0, tokenizer=None) -> "SampleWriter":
        return cls(Path(run_dir) / FILE_NAME, k, seed=seed, tokenizer=tokenizer)

    def pick(self, n: int, k: int, step: int, split: str) -> list[int]:
        """Indices of the k of n candidates written this step (sorted; all when k ≥ n)."""
        if k >= n:
            return list(range(n))
        rng = np.random.default_rng([self.seed, step, SPLITS[split]])
        return sorted(rng.choice(n, size=k, replace=False).tolist())

    def write_train(self, step: int, groups: Sequence[common_pb2.Group], k: int | None = None) -> int:
        """Append k rows drawn from every sample of the step's trained groups; rows written."""
        pairs = [(g, s) for g in groups for s in g.samples]
        chosen = self.pick(len(pairs), self.k if k is None else k, step, "train")
        return self._append([sample_row(step, *pairs[i], self.tokenizer) for i in chosen])

    def write_eval(self, step: int, samples: Sequence[EvalSample], k: int | None = None) -> int:
        """Append k rows drawn from an evaluation's samples; rows written."""
        chosen = self.pick(len(samples), self.k if k is None else k, step, "eval")
        return self._append([eval_row(step, samples[i]) for i in chosen])

    def _append(self, rows: list[dict]) -> int:
        if rows:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        return len(rows)
