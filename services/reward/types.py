"""The data a reward rule sees and returns, independent of protobuf.

A rule scores a batch of `RewardItem`s and returns one `ItemScore` (or a plain float,
meaning OK) per item, in order. A failed score carries a status, never a silent 0.
"""

import enum
import math
from dataclasses import dataclass, field

from meshrl.api.common.v1 import common_pb2


class Status(enum.IntEnum):
    """Mirrors `meshrl.common.v1.ScoreStatus` (same numbers)."""

    OK = common_pb2.SCORE_STATUS_OK
    ERROR = common_pb2.SCORE_STATUS_ERROR
    TIMEOUT = common_pb2.SCORE_STATUS_TIMEOUT


@dataclass(frozen=True)
class RewardItem:
    """One response to score, with what rules may need about it."""

    id: str
    response: str
    ground_truth: str = ""
    prompt: str = ""
    data_source: str = ""
    num_tokens: int = 0  # response length in tokens (0 when unknown, e.g. via the gRPC API)
    truncated: bool = False  # hit max_tokens (an episode: a limit ended it, finish reason LENGTH)
    metadata: dict[str, str] = field(default_factory=dict)  # the mesh's own task labels (e.g. split)
    ground_truth_json: str = ""  # any type, as JSON ("" = none); `ground_truth` is the rules' text
    prompt_messages: tuple[tuple[str, str], ...] = ()  # (role, content) before the chat template
    finish_reason: int = 0  # meshrl.common.v1.FinishReason (same numbers as reward.v1's)
    extra_json: str = ""  # the dataset row's extra_info as JSON
    # A multi-turn episode (meshrl/episodes.py): `response` is then the model's final turn
    # (what rules check) and `num_tokens` its own tokens; `episode_text` the whole episode as
    # the model saw it and `episode` its turns and observations (what external services get).
    episode_text: str = ""
    episode: tuple[tuple[str, str], ...] = ()  # ("assistant" | "tool", content) after the prompt
    env_reward: float | None = None  # the environment's reward for the episode; None: none given


@dataclass(frozen=True)
class ItemScore:
    value: float = math.nan
    status: Status = Status.OK
    error: str = ""
    details: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == Status.OK


def ok(value: float, **details: float) -> ItemScore:
    return ItemScore(value=float(value), details=details)


def failed(status: Status, error: str) -> ItemScore:
    return ItemScore(status=status, error=error)


@dataclass(frozen=True)
class ComponentScore:
    """One component's result for one item, as kept in `Sample.reward_components`."""

    name: str
    weight: float
    score: ItemScore
    latency_s: float
