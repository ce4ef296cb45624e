"""Reward components built from the run config: a built-in rule or an external service.

Every component scores a whole batch at once and returns one `ItemScore` per item. The
latency recorded for each item is the batch's wall time for that component. Whatever
goes wrong inside a component (an exception, a wrong number of results, a non-finite
value) becomes ERROR for the affected items, never an exception out of `score`.
"""

import asyncio
import math
import time
from dataclasses import dataclass
from typing import Protocol

from meshrl.config import ConfigError
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.external import ExternalComponent
from meshrl.services.reward.registry import Rule, RuleParams, get_rule
from meshrl.services.reward.types import ComponentScore, ItemScore, RewardItem, Status, failed, ok


class Component(Protocol):
    name: str
    weight: float

    async def score(self, items: list[RewardItem]) -> list[ItemScore]: ...


def checked(results: list, n: int, who: str) -> list[ItemScore]:
    """Floats → OK scores; wrong count or non-finite values → ERROR naming the component."""
    if len(results) != n:
        return [failed(Status.ERROR, f"{who} returned {len(results)} results for {n} items")] * n
    scores = [r if isinstance(r, ItemScore) else ok(r) for r in results]
    return [
        failed(Status.ERROR, f"{who} returned a non-finite score {s.value!r}")
        if s.ok and not math.isfinite(s.value)
        else s
        for s in scores
    ]


@dataclass
class RuleComponent:
    name: str
    weight: float
    rule: Rule
    params: RuleParams

    async def score(self, items: list[RewardItem]) -> list[ItemScore]:
        try:  # rules may block (math_verify waits on its process pool): off the event loop
            results = await asyncio.to_thread(self.rule.fn, items, self.params)
        except Exception as err:
            return [failed(Status.ERROR, f"rule {self.rule.kind!r} raised {type(err).__name__}: {err}")] * len(items)
        return checked(results, len(items), f"rule {self.rule.kind!r}")


def build_component(cfg: RewardComponentConfig, run_id: str = "") -> Component:
    """Validate one config entry into a component. Raises ConfigError naming the problem."""
    if cfg.kind == "external":
        return ExternalComponent.from_config(cfg, run_id)
    rule = get_rule(cfg.kind)
    return RuleComponent(cfg.name, cfg.weight, rule, rule.parse_params(cfg.params, cfg.name))


async def score_all(components: list[Component], items: list[RewardItem]) -> list[list[ComponentScore]]:
    """Run every component concurrently on the batch → rows[i] = item i's component scores."""

    async def timed(c: Component) -> list[ComponentScore]:
        t0 = time.perf_counter()
        scores = await c.score(items)
        latency = time.perf_counter() - t0
        return [ComponentScore(c.name, c.weight, s, latency) for s in scores]

    columns = await asyncio.gather(*(timed(c) for c in components))
    return [list(row) for row in zip(*columns)] if columns else [[] for _ in items]


def build_components(cfgs: list[RewardComponentConfig], run_id: str = "") -> list[Component]:
    """All configured components, validated; duplicate names are a ConfigError."""
    names = [c.name for c in cfgs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"reward.components: names must be unique, repeated: {', '.join(duplicates)}")
    if not cfgs:
        raise ConfigError("reward.components is empty: configure at least one reward component")
    return [build_component(c, run_id) for c in cfgs]
