"""meshrl.telemetry: traces (tracing, spans_*, waterfall) and metrics (metrics).

Import the submodule you need; this package imports nothing so that `import meshrl.telemetry`
stays cheap for every service.
"""
