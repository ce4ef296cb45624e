"""The errors a user can fix, shared by every floor: each message names what is wrong and how to fix it.

ConfigError   a config that cannot run (the key, the bad value, what is allowed)
LaunchError   something outside the config stops the run from starting (missing model or
              data, NATS unreachable); the CLI prints it as one line and exits 2
RunFailed     the run started but did not finish (the learner failed, a service died); exit 1
StopRequested SIGTERM arrived: unwind and stop every child (the launcher's signal handler); exit 143
"""


class ConfigError(ValueError):
    """A config that cannot run. The message says which key, what was given, what is allowed."""


class LaunchError(RuntimeError):
    """Something outside the config stops the run from starting; the message says how to fix it."""


class RunFailed(RuntimeError):
    """The run started but did not finish (the learner failed, a service died)."""


class StopRequested(BaseException):
    """SIGTERM arrived: unwind and stop every child (raised by `stop_on_signals`).

    A BaseException, like KeyboardInterrupt: the handler raises it inside whatever code runs
    at that moment, and library code that catches `Exception` (OpenTelemetry's resource
    detectors, run while the launcher opens its /metrics endpoint) would otherwise swallow
    the stop and leave the run going."""
