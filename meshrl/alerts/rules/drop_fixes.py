"""How to fix what makes the learner drop groups, per ledger reason (the `dropped_in_a_row`
stop message names the top reasons with these).

The reasons are the ledger's: the learner's own checks (services/learner/groups.py) and the
rollout's `Group.drop_reason` codes (`env_<status>` for an environment's failure,
services/rollout/agent/failures.py; `prompt_too_long`; `no_policy_endpoint`).
"""

from __future__ import annotations

ENV_CHECK = "run `meshrl env check ADDRESS` against it"

FIXES = {
    "env_deadline_exceeded": "the environment answered no call within environment.timeout_s: raise it, or make "
    "its Reset/Step faster (its log says where the time goes)",
    "env_unavailable": "the environment could not be reached after retries: check it runs (`meshrl status RUN_DIR`) "
    "and environment.address / replicas",
    "env_not_found": "the environment did not hold the episodes it was asked about (a replica restarted, or a load "
    "balancer sent a Step to another replica than the Reset): read its log",
    "env_invalid_answer": f"the environment answered outside the contract (the detail says what): {ENV_CHECK}",
    "env_invalid_argument": f"the environment refused meshrl's requests (the detail names the field; is "
    f"environment.name one it serves?): {ENV_CHECK}",
    "env_failed_precondition": f"the environment refused a Step on an episode it had ended: {ENV_CHECK}",
    "env_unauthenticated": "the environment refused the bearer token: environment.token_env / token_file must hold "
    "the token it expects",
    "env_resource_exhausted": "every environment replica is at its open-episode cap: raise environment.replicas or "
    "its max_episodes, or lower learner.max_groups_in_flight",
    "prompt_too_long": "the first prompt (the task's messages, the tools block, the first observation) leaves no "
    "room for a turn: raise rollout.max_model_len, or lower data.max_prompt_tokens",
    "no_policy_endpoint": "the environment runs its own agent (ResetResponse.drives_policy): set "
    "rollout.agent.policy_endpoint.enabled: true",
    "malformed": "the rollout published groups that cannot be trained (the detail says what): check that the rollout "
    "runs the learner's meshrl version and model, and read its log",
    "empty": "groups arrived with no samples: read the rollout's log",
    "future_version": "groups claim weights this learner never published: another learner (or an older one of this "
    "run) is publishing to the run's subjects",
}


def how_to_fix(reason: str) -> str:
    """What to do about groups dropped for `reason`."""
    if reason in FIXES:
        return FIXES[reason]
    if reason.startswith("env_"):
        return "the environment failed the episodes (the detail has its message): read its log"
    return "read the learner's groups.jsonl (each drop's detail) and the rollout's log"
