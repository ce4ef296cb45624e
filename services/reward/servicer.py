"""`RewardService.Score` served by meshrl's own reward service.

`request.component` picks what scores the batch:
- a component name from the run config (its params, weight ignored), or
- a built-in kind (`math_verify`, `exact_match`, ...) with default params, or
- "" (empty): the run's combined reward; `details` holds each component's raw value,
  and the status is ERROR naming the failed components when a required one failed.
"""

import json
import math

import grpc

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config import ConfigError
from meshrl.services.reward.combine import combine
from meshrl.services.reward.components import Component, RuleComponent
from meshrl.services.reward.registry import get_rule
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.types import ComponentScore, ItemScore, RewardItem


class BadItem(ValueError):
    """A ScoreItem that breaks the contract (e.g. ground_truth_json that is not JSON)."""


def rules_text(item: reward_pb2.ScoreItem) -> str:
    """The ground truth as rules compare it: a JSON string as is, any other value as JSON."""
    if not item.ground_truth_json:
        return ""
    try:
        value = json.loads(item.ground_truth_json)
    except ValueError as err:
        raise BadItem(
            f"item {item.id!r}: ground_truth_json is not JSON ({err}); send e.g. "
            f"'\"7\"' for the string 7 or '[1, 2]' for a list"
        ) from None
    return value if isinstance(value, str) else item.ground_truth_json


def final_turn(item: reward_pb2.ScoreItem) -> str:
    """What rules check: an episode's last model turn; a single-turn item's response."""
    turns = [m.content for m in item.episode if m.role == "assistant"]
    return turns[-1] if turns else item.response


def from_score_item(item: reward_pb2.ScoreItem) -> RewardItem:
    return RewardItem(
        id=item.id,
        response=final_turn(item),
        ground_truth=rules_text(item),
        prompt=item.prompt,
        data_source=item.data_source,
        num_tokens=item.response_tokens,
        truncated=item.truncated,
        ground_truth_json=item.ground_truth_json,
        finish_reason=item.finish_reason,
        prompt_messages=tuple((m.role, m.content) for m in item.prompt_messages),
        extra_json=item.extra_json,
        episode=tuple((m.role, m.content) for m in item.episode),
        episode_text=item.response if item.episode else "",
    )


def to_result(id: str, s: ItemScore) -> reward_pb2.ScoreResult:
    return reward_pb2.ScoreResult(
        id=id, score=s.value if s.ok else 0.0, status=int(s.status), error=s.error, details=s.details
    )


def combined_result(id: str, row: list[ComponentScore], reward: float) -> reward_pb2.ScoreResult:
    details = {c.name: c.score.value for c in row if c.score.ok}
    if math.isfinite(reward):
        return reward_pb2.ScoreResult(id=id, score=reward, status=common_pb2.SCORE_STATUS_OK, details=details)
    errors = "; ".join(f"{c.name}: {c.score.status.name} {c.score.error}" for c in row if not c.score.ok)
    return reward_pb2.ScoreResult(id=id, status=common_pb2.SCORE_STATUS_ERROR, error=errors, details=details)


class RewardServicer(reward_pb2_grpc.RewardServiceServicer):
    def __init__(self, scorer: GroupScorer):
        self.scorer = scorer

    def component(self, name: str) -> Component:
        if name in self.scorer.by_name:
            return self.scorer.by_name[name]
        rule = get_rule(name)  # ConfigError names the known kinds
        return RuleComponent(name, 1.0, rule, rule.parse_params({}, name))

    async def Score(self, request: reward_pb2.ScoreRequest, context) -> reward_pb2.ScoreResponse:
        try:
            items = [from_score_item(i) for i in request.items]
        except BadItem as err:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(err))
        if not request.component:
            rows = await self.scorer.score_items(items)
            results = map(combined_result, (i.id for i in items), rows, combine(rows).tolist())
            return reward_pb2.ScoreResponse(results=list(results))
        try:
            component = self.component(request.component)
        except ConfigError as err:
            configured = ", ".join(self.scorer.by_name) or "(none)"
            await context.abort(grpc.StatusCode.NOT_FOUND, f"{err} (configured components: {configured})")
        scores = await component.score(items)
        return reward_pb2.ScoreResponse(results=[to_result(i.id, s) for i, s in zip(items, scores)])
