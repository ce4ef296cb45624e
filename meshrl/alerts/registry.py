"""Name → alert rule class, filled by `@register_rule` in the files of `meshrl/alerts/rules/`.

    @register_rule("kl_high")
    class KLHigh(Rule): ...

The name is also the `AlertsConfig` field holding the rule's settings (`alerts.kl_high`). The
rules' folder is imported on the first lookup, so a new file there is a new rule.
"""

from __future__ import annotations

from typing import Callable

from meshrl.registry import Registry

ALERT_RULES = Registry("alert rule", decorator="register_rule", folder="meshrl.alerts.rules")


def register_rule(name: str) -> Callable[[type], type]:
    """Decorator: register the class as alert rule `name` (and give it that `name`)."""

    def add(cls: type) -> type:
        cls.name = name
        return ALERT_RULES.add(name, cls)

    return add


def rule_class(name: str) -> type:
    return ALERT_RULES.get(name)


def rule_names() -> list[str]:
    return ALERT_RULES.names()
