"""`environment`: the episode's reward from its environment (multi-turn tasks).

    value = Sample.env_reward      the sum of the turn rewards the environment gave

An episode meshrl ended at its limits (max_turns, its token budget, the context: finish
reason LENGTH) before the environment rewarded any turn scores `params.truncated` (default
0.0): it ran out of moves without an answer, and the policy must learn that this earns
nothing. Dropping those groups instead (`truncated: null`) trains only on the groups whose
every episode finished, a biased sample (on the tool example one seed learned to call the
tool again instead of answering: docs/benchmarks.md, "Agents").
Any other item without an environment reward (a single-turn task, an environment that
said done without rewarding) gets status ERROR saying so, never a silent 0; give the
component an `on_failure: {value: X}` where a missing reward has a meaning.

`credit` says where the learner puts the turn rewards (the reward service scores the same
either way): `turn` (default) at the last model token of the turn that earned each one, so
estimators that read per-token rewards (gae, reinforce_plus_plus, remax,
optimal_token_baseline) credit a turn's reward to that turn and the ones before it;
`episode` as one reward at the episode's end, like any other component. Estimators of one
score per episode (grpo, rloo, ...) see the same sum either way. docs/trajectories.md.
"""

from meshrl.config.reward_rules import EnvironmentParams
from meshrl.services.reward.registry import register_reward
from meshrl.services.reward.types import ItemScore, RewardItem, Status, failed, ok

NO_ENV_REWARD = (
    "the episode carries no environment reward (Sample.has_env_reward is false): "
    "the task ran in no environment, or its environment rewarded no turn; remove "
    "the environment component, have the environment reward the episode, or set "
    "its on_failure: {value: X}"
)


@register_reward("environment", params=EnvironmentParams)
def environment(items: list[RewardItem], params: EnvironmentParams) -> list[ItemScore]:
    return [episode_score(it, params) for it in items]


def episode_score(item: RewardItem, params: EnvironmentParams) -> ItemScore:
    if item.env_reward is not None:
        return ok(item.env_reward)
    if item.episode and item.truncated and params.truncated is not None:
        return ok(params.truncated)  # cut at meshrl's limits before the environment rewarded it
    return failed(Status.ERROR, NO_ENV_REWARD)
