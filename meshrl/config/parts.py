"""The parts a config may name, checked against what the registries hold, without torch.

A part is declared once, by its decorator: `@register_advantage_estimator("grpo")` in
meshrl/algos/advantages/, `@register_policy_loss("ppo", level="token")` in
meshrl/algos/losses/, `@register_reward("regex", ...)` in services/reward/rules/,
`@register_tool_parser("hermes")` in services/rollout/agent/parsers/, ... Importing a folder
runs them and fills its registry (meshrl/registry.py). The config must not import torch nor
a service, so it reads the registries' names and declarations from the parts table
(meshrl.config.parts_table, written from the registries by scripts/gen_parts_table.py), not
from their source. A part of the user's own package is named by import path
(meshrl.config.imported_parts).
"""

from __future__ import annotations

from collections.abc import Iterable

from meshrl.config.imported_parts import imported_part, is_import_path
from meshrl.config.parts_table import DEDICATED_OPTION_KEYS, INPUTS, Declared, late_part, names, registered
from meshrl.registry import did_you_mean

__all__ = ["DEDICATED_OPTION_KEYS", "INPUTS", "Declared", "is_import_path", "registered"]

# the offline preference loss (`algorithm.offline: true`, kind from `algorithm.dpo_loss_type`):
# not a registered policy loss, the offline learner computes it (`meshrl.algos.dpo`)
OFFLINE_POLICY_LOSS = "dpo"
EXTERNAL_REWARD_KIND = "external"  # a gRPC reward service
# the learned reward model (meshrl/config/reward_model.py): an external service that
# `meshrl train` starts itself from the run's `reward_model` section
REWARD_MODEL_KIND = "reward_model"
# `kind: environment`: the episode's environment reward; `params.credit` where the learner
# puts each turn's reward (services/reward/rules/environment.py, docs/trajectories.md)
ENVIRONMENT_REWARD_KIND = "environment"
ENVIRONMENT_CREDITS = ("turn", "episode")


def turn_credited_components(components) -> tuple[str, ...]:
    """Names of the `environment` components whose turn rewards the learner credits per turn
    (`params.credit: turn`, the default)."""
    return tuple(
        c.name for c in components if c.kind == ENVIRONMENT_REWARD_KIND and c.params.get("credit", "turn") == "turn"
    )


def part(key: str, value: str, family: str, extra: Iterable[str] = ()) -> Declared | None:
    """`value`'s declaration (None for one of `extra`, names that are no registered part);
    ValueError naming the key, the value and the fix."""
    if is_import_path(value):
        return imported_part(key, value, family)
    known = registered(family)
    if value in known:
        return known[value]
    if value in extra:
        return None
    if (late := late_part(family, value)) is not None:
        return late
    raise ValueError(
        unknown_name(key, value, [*known, *extra], family)
        + " (or a function of your own package: `package.module:function`)"
    )


def advantage_estimators() -> dict[str, Declared]:
    return registered("advantage estimator")


def policy_losses() -> dict[str, Declared]:
    return registered("policy loss")


def preference_losses() -> dict[str, Declared]:
    return registered("preference loss")


def rollout_correction_modes() -> dict[str, Declared]:
    return registered("rollout-correction mode")


def rejection_criteria() -> dict[str, Declared]:
    return registered("rejection criterion")


def loss_masks() -> dict[str, Declared]:
    return registered("loss mask")


def reweightings() -> dict[str, Declared]:
    return registered("PF-PPO reweighting")


def reward_rule_kinds() -> tuple[str, ...]:
    return names("reward rule")


def kl_estimators() -> tuple[str, ...]:
    return names("KL estimator")


def loss_agg_modes() -> tuple[str, ...]:
    """In meshrl.algos' order (the first is the default)."""
    return names("loss aggregation mode")


def tool_parsers() -> tuple[str, ...]:
    """Tool-call formats of multi-turn rollouts (`rollout.agent.tool_parser`)."""
    return names("tool-call format")


def builtin_environments() -> tuple[str, ...]:
    """The environment service's built-ins (`environment.builtin`)."""
    return names("built-in environment")


def estimator_needs(name: str) -> tuple[str, ...]:
    """The extra inputs advantage estimator `name` (a registered name or an import path) declares."""
    return part("algorithm.advantage_estimator", name, "advantage estimator").needs


def unknown_name(key: str, value: str, allowed: Iterable[str], what: str) -> str:
    """The message for a name that is not registered: the valid ones and the closest."""
    valid = sorted(allowed)
    hint = did_you_mean(value, valid)
    return f"{key}={value!r} is not a known {what}{hint}. Valid: {', '.join(valid)}"


def check_name(key: str, value: str, allowed: Iterable[str], what: str, kind: str = "") -> str:
    """`value` when it is one of `allowed` (or a part of registry `kind` added since the parts
    table was written); else ValueError with `unknown_name`'s message."""
    allowed = list(allowed)
    if value not in allowed and not (kind and late_part(kind, value) is not None):
        raise ValueError(unknown_name(key, value, allowed, what))
    return value


# The same declarations as plain tables, read on first access (PEP 562), for code that wants
# a name -> attribute mapping: nothing here is a second list.
TABLES = {
    "ADVANTAGE_ESTIMATORS": lambda: {n: d.needs_values for n, d in advantage_estimators().items()},
    "ESTIMATOR_NEEDS": lambda: {n: d.needs for n, d in advantage_estimators().items() if d.needs},
    "POLICY_LOSSES": lambda: {n: d.level for n, d in policy_losses().items()},
    "LOSS_OPTIONS": lambda: {
        n: d.options for family in (policy_losses, preference_losses) for n, d in family().items()
    },
    "DPO_LOSS_TYPES": lambda: tuple(preference_losses()),
    "KL_ESTIMATORS": kl_estimators,
    "LOSS_AGG_MODES": loss_agg_modes,
    "REWARD_RULE_KINDS": reward_rule_kinds,
    "TOOL_PARSERS": tool_parsers,
}


def __getattr__(name: str):
    if name in TABLES:
        return TABLES[name]()
    raise AttributeError(f"module 'meshrl.config.parts' has no attribute {name!r}")
