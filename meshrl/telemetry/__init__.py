"""meshrl.telemetry: metrics (`metrics`, `service_metrics`, `resources`) and traces
(`tracing` to start them, `spans/` to propagate, export, read and draw them).

Import the submodule you need; this package imports nothing so that `import meshrl.telemetry`
stays cheap for every service.
"""
