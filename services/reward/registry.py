"""Built-in reward rules, registered by kind name.

    @register_reward("exact_match", params=ExactMatchParams)
    def exact_match(items: list[RewardItem], params: ExactMatchParams) -> list[float | ItemScore]: ...

`params` is a pydantic model (unknown keys forbidden) built from the component's
`params:` mapping in the run config; the built-in rules' models live in
meshrl/config/reward_rules.py, so a typo fails when the config loads, naming the key. A rule
returns one float (meaning OK) or `ItemScore` per item, in order.
A new rule is a new file in rules/ (imported on the first lookup); the torch-free config
learns its kind from the parts table (meshrl.config.parts), not from this service.
"""

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel

from meshrl.config import ConfigError
from meshrl.config.reward_rules import RuleParams, parse_rule_params
from meshrl.registry import Registry, UnknownNameError
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


REWARD_RULES = Registry("reward rule", decorator="register_reward", folder="meshrl.services.reward.rules")


def register_reward(kind: str, params: type[RuleParams] = RuleParams):
    """Decorator: register `fn` as reward rule `kind`, its params checked by `params`."""

    def decorate(fn: RuleFn) -> RuleFn:
        REWARD_RULES.add(kind, Rule(kind=kind, fn=fn, params_model=params), origin=f"{fn.__module__}.{fn.__qualname__}")
        return fn

    return decorate


def get_rule(kind: str) -> Rule:
    """The rule of `kind`; ConfigError naming the closest kind and every one otherwise."""
    try:
        return REWARD_RULES.get(kind)
    except UnknownNameError as err:
        raise ConfigError(f"{err} Or kind: external with an address (a reward service of your own).") from None
