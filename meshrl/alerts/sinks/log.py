"""Alerts as Python log records on the `meshrl.alerts` logger (level by severity)."""

import logging

from meshrl.alerts.types import Alert

LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "critical": logging.CRITICAL}


class LogSink:
    def __init__(self, logger: logging.Logger | None = None):
        self.logger = logger or logging.getLogger("meshrl.alerts")

    def __call__(self, alert: Alert) -> None:
        self.logger.log(
            LEVELS.get(alert.severity, logging.WARNING),
            "ALERT %s [%s, action=%s] step %s: %s",
            alert.rule,
            alert.severity,
            alert.action,
            alert.step,
            alert.message,
        )
