"""Where alerts go: log, a JSONL events file, NATS (an async publish), a webhook.

`build_sinks(config, run_dir, publish)` makes the ones `AlertsConfig` asks for: always the
log; the run dir's alerts file (`meshrl.run_layout.ALERTS`) when `events_file` is on and a run dir is given; NATS when `publish` is given; the webhook
when `config.webhook` is set.
"""

from __future__ import annotations

from pathlib import Path

from meshrl import run_layout as layout
from meshrl.alerts.sinks.jsonl import JsonlSink
from meshrl.alerts.sinks.log import LogSink
from meshrl.alerts.sinks.nats import NatsSink
from meshrl.alerts.sinks.webhook import WebhookSink
from meshrl.config.alerts import AlertsConfig

__all__ = ["JsonlSink", "LogSink", "NatsSink", "WebhookSink", "build_sinks"]


def build_sinks(config: AlertsConfig, run_dir: str | Path | None = None, publish=None) -> list:
    sinks: list = [LogSink()]
    if config.events_file and run_dir is not None:
        sinks.append(JsonlSink(Path(run_dir) / layout.ALERTS))
    if publish is not None:
        sinks.append(NatsSink(publish))
    if config.webhook is not None:
        sinks.append(WebhookSink(config.webhook))
    return sinks
