"""Errors a user can fix before a run starts (missing model or data, NATS unreachable).

The CLI prints them as one line and exits 2, without a traceback.
"""


class LaunchError(RuntimeError):
    """Something outside the config stops the run from starting; the message says how to fix it."""


class RunFailed(RuntimeError):
    """The run started but did not finish (the learner failed, a service died)."""
