"""Name → alert rule class, filled by `@register_rule` in `meshrl.alerts.rules.*`.

    @register_rule("kl_high")
    class KLHigh(Rule): ...

The name is also the `AlertsConfig` field holding the rule's settings (`alerts.kl_high`).
"""

from __future__ import annotations

from typing import Callable

_RULES: dict[str, type] = {}


def register_rule(name: str) -> Callable[[type], type]:
    def add(cls: type) -> type:
        if name in _RULES and _RULES[name] is not cls:
            other = _RULES[name]
            raise ValueError(
                f"alert rule {name!r} is already registered by "
                f"{other.__module__}.{other.__qualname__}; pick another name"
            )
        cls.name = name
        _RULES[name] = cls
        return cls

    return add


def rule_class(name: str) -> type:
    if name not in _RULES:
        raise KeyError(
            f"unknown alert rule {name!r}; registered: {', '.join(rule_names())}. "
            f"Add one with @register_rule({name!r})."
        )
    return _RULES[name]


def rule_names() -> list[str]:
    import meshrl.alerts.rules  # lazy: breaks the cycle: every rule module imports this registry  # noqa: F401

    return sorted(_RULES)
