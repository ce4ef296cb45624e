"""Score a whole `Group` (all its samples in one batch per component) in place.

Item ids are `<group_id>/<sample index>`, so an external service's results map back to
samples. A group's greedy sample (ReMax's baseline, `Group.greedy_sample`, index n) is
scored in the same batch and gets its own `reward` and `reward_components`. After scoring:
each sample has `reward` and `reward_components` (see combine), and `group.scored` is true
even when some components failed — failures are visible per component and as a NaN reward,
not by leaving the group unscored.
"""

from meshrl.api.common.v1 import common_pb2
from meshrl.episodes import episode_messages, final_text, model_token_count, rendered_episode
from meshrl.services.reward.combine import fill_samples
from meshrl.services.reward.components import Component, score_all
from meshrl.services.reward.failure_policy import apply_policies
from meshrl.services.reward.types import ComponentScore, RewardItem


def scored_samples(group: common_pb2.Group) -> list[common_pb2.Sample]:
    """The group's samples, then its greedy sample when the rollout made one (ReMax's
    baseline: scored in the same batch, its reward stays on `group.greedy_sample`)."""
    greedy = [group.greedy_sample] if group.HasField("greedy_sample") else []
    return [*group.samples, *greedy]


def group_items(group: common_pb2.Group) -> list[RewardItem]:
    """One item per sample. A multi-turn episode is scored whole: rules read its final turn
    (`response`), external services the rendered episode; lengths count the model's tokens;
    the environment's reward rides along for the `environment` component."""
    task = group.task
    return [
        RewardItem(
            id=f"{group.group_id}/{s.index}",
            response=final_text(s),
            ground_truth=task.ground_truth,
            prompt=task.prompt_text,
            data_source=task.data_source,
            num_tokens=model_token_count(s),
            truncated=s.finish_reason == common_pb2.FINISH_REASON_LENGTH,
            metadata=dict(task.metadata),
            ground_truth_json=task.ground_truth_json,
            prompt_messages=tuple((m.role, m.content) for m in task.prompt_messages),
            finish_reason=s.finish_reason,
            extra_json=task.extra_json,
            episode_text=rendered_episode(s) if s.turns else "",
            episode=episode_messages(s),
            env_reward=s.env_reward if s.has_env_reward else None,
        )
        for s in scored_samples(group)
    ]


class GroupScorer:
    """`policies`: each component's on_failure (failure_policy.py), applied by score_group
    only (the run path); a missing name means `drop`."""

    def __init__(self, components: list[Component], policies: dict | None = None):
        self.components = components
        self.by_name = {c.name: c for c in components}
        self.policies = policies or {}

    async def score_items(self, items: list[RewardItem]) -> list[list[ComponentScore]]:
        return await score_all(self.components, items)

    async def score_group(self, group: common_pb2.Group) -> None:
        rows = apply_policies(await self.score_items(group_items(group)), self.policies)
        fill_samples(scored_samples(group), rows)
        group.scored = True

    async def close(self) -> None:
        for c in self.components:
            close = getattr(c, "close", None)
            if close is not None:
                await close()
