"""meshrl.ops: running and watching runs — the CLI, the local launcher, telemetry (metrics and
traces), alerts, doctor, evaluation and plots. Services use telemetry; nothing here trains."""
