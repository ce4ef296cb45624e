"""`service_down`: a service failing `consecutive_failures` health checks in a row.

Fed by the engine's health source: `{service: healthy}` from the callback given to
`AlertEngine(health_check=...)`, or passed to `poll(health=...)` by a caller whose checks
are async (gRPC `grpc.health.v1`, a process supervisor). One alert per service.
"""

from meshrl.alerts.registry import register_rule
from meshrl.alerts.rules.base import Rule
from meshrl.alerts.types import Condition


@register_rule("service_down")
class ServiceDown(Rule):
    def __init__(self, config):
        super().__init__(config)
        self.failures: dict[str, int] = {}

    def on_poll(self, now, health):
        need = self.config.consecutive_failures
        verdicts = []
        for service, healthy in (health or {}).items():
            count = 0 if healthy else self.failures.get(service, 0) + 1
            self.failures[service] = count
            message = f"service {service} down: {count} failed health checks in a row (limit {need})"
            verdicts.append(
                Condition(f"{self.name}:{service}", count >= need, message, {"service": service, "failures": count})
            )
        return verdicts
