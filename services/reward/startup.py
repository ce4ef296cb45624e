"""Start-up checks and warm-up, so problems show before the first group arrives.

- every external component's address must answer `grpc.health.v1` SERVING within
  `within_s` (or its own entry in `waits`), else ConnectionError naming the component and address;
- external components get their call metrics (instrument_externals);
- the math-verify process pools are started and warmed (imports paid once, not by the
  first item's deadline); so is each reasoning_gym component's scorer child (a missing
  reasoning-gym venv is a ConfigError here, before the first group).
"""

import asyncio

from meshrl.services.reward.call_metrics import CallMetrics
from meshrl.services.reward.components import Component, RuleComponent
from meshrl.services.reward.external import ExternalComponent, check_reachable
from meshrl.services.reward.rules.reasoning_gym import warm_scorer
from meshrl.services.reward.rules.verify_pool import shared_pool

EXTERNAL_CHECK_S = 5.0


async def check_externals(
    components: list[Component], within_s: float = EXTERNAL_CHECK_S, waits: dict[str, float] | None = None
) -> None:
    """`waits`: component name → its own wait (the reward model, still loading), else within_s."""
    externals = [c for c in components if isinstance(c, ExternalComponent)]
    await asyncio.gather(*(check_reachable(c, (waits or {}).get(c.name, within_s)) for c in externals))


def instrument_externals(components: list[Component], handle) -> None:
    """Per-service call metrics (call_metrics.py) on the replica's endpoint; None = off."""
    for c in components:
        if isinstance(c, ExternalComponent) and handle is not None:
            c.calls.use_metrics(CallMetrics(handle, component=c.name, target=c.address))


async def warm_pools(components: list[Component]) -> None:
    counts = {c.params.workers for c in components if isinstance(c, RuleComponent) and c.rule.kind == "math_verify"}
    await asyncio.gather(*(asyncio.to_thread(shared_pool(n).start) for n in counts))
    for c in components:
        if isinstance(c, RuleComponent) and c.rule.kind == "reasoning_gym":
            await asyncio.to_thread(warm_scorer, c.params)
