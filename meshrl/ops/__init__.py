"""meshrl.ops: running and watching runs — the CLI, the local launcher, the shared runner of
every service process (`service`), telemetry (metrics and traces), alerts, doctor,
evaluation and plots. Services use telemetry and the runner; nothing here trains."""
