"""`Item`: what a reward function receives, decoded from a `ScoreItem` (JSON fields parsed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from meshrl.api.reward.v1 import reward_pb2

FINISH_REASONS = {
    reward_pb2.FINISH_REASON_STOP: "stop",
    reward_pb2.FINISH_REASON_LENGTH: "length",
    reward_pb2.FINISH_REASON_ABORT: "abort",
}


@dataclass(frozen=True)
class Item:
    id: str
    response: str
    prompt: str = ""  # rendered (chat template applied)
    messages: list[dict[str, str]] = field(default_factory=list)  # [{"role", "content"}]
    ground_truth: Any = None  # decoded JSON: str, number, list, dict; None when absent
    data_source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)  # the dataset row's extra_info
    response_tokens: int = 0
    finish_reason: str = ""  # "stop", "length", "abort" or "" (unknown)
    truncated: bool = False
    component: str = ""  # the run config's component name this call is for
    run_id: str = ""
    # a multi-turn episode after the prompt ([{"role": "assistant" | "tool", "content"}]);
    # `response` is then the whole episode rendered. Empty for a single-turn response.
    episode: list[dict[str, str]] = field(default_factory=list)


def _json(text: str, name: str, item_id: str, empty: Any) -> Any:
    if not text:
        return empty
    try:
        return json.loads(text)
    except ValueError as err:
        raise ValueError(f"item {item_id!r}: {name} is not JSON ({err})") from None


def from_proto(it: reward_pb2.ScoreItem, request: reward_pb2.ScoreRequest) -> Item:
    """Raises ValueError (naming the item and field) on malformed JSON."""
    return Item(
        id=it.id,
        response=it.response,
        prompt=it.prompt,
        messages=[{"role": m.role, "content": m.content} for m in it.prompt_messages],
        ground_truth=_json(it.ground_truth_json, "ground_truth_json", it.id, None),
        data_source=it.data_source,
        extra=_json(it.extra_json, "extra_json", it.id, {}),
        response_tokens=it.response_tokens,
        finish_reason=FINISH_REASONS.get(it.finish_reason, ""),
        truncated=it.truncated,
        component=request.component,
        run_id=request.run_id,
        episode=[{"role": m.role, "content": m.content} for m in it.episode],
    )
