"""Built-in reward rules, registered by kind name.

    @register_reward("exact_match", params=ExactMatchParams)
    def exact_match(items: list[RewardItem], params: ExactMatchParams) -> list[float | ItemScore]: ...

`params` is a pydantic model (unknown keys forbidden) built from the component's
`params:` mapping in the run config; the built-in rules' models live in
meshrl/config/reward_rules.py, so a typo fails when the config loads, naming the key. A rule
returns one float (meaning OK) or `ItemScore` per item, in order.
A new rule is a new file in rules/; the config reads its decorator from there at load time,
without importing this service (meshrl.config.parts).
"""

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from meshrl.config import ConfigError
from meshrl.config.reward_rules import RuleParams, parse_rule_params
from meshrl.services.reward.types import ItemScore, RewardItem

RuleFn = Callable[[list[RewardItem], BaseModel], list[float | ItemScore]]


@dataclass(frozen=True)
class Rule:
    kind: str
    fn: RuleFn
    params_model: type[RuleParams]

    def parse_params(self, raw: dict, component: str) -> RuleParams:
        try:
            return parse_rule_params(self.params_model, self.kind, component, raw)
        except ValueError as err:
            raise ConfigError(str(err)) from None


RULES: dict[str, Rule] = {}


def register_reward(kind: str, params: type[RuleParams] = RuleParams):
    def decorate(fn: RuleFn) -> RuleFn:
        if kind in RULES:
            raise ValueError(f"reward kind {kind!r} is registered twice")
        RULES[kind] = Rule(kind=kind, fn=fn, params_model=params)
        return fn

    return decorate


def get_rule(kind: str) -> Rule:
    import meshrl.services.reward.rules  # lazy: breaks the cycle: every rule module imports this registry  # noqa: F401

    if kind not in RULES:
        raise ConfigError(
            f"reward kind {kind!r} is unknown; built-in kinds: {', '.join(sorted(RULES))}, "
            f"or 'external' with an address"
        )
    return RULES[kind]
