"""Why an evaluation could not run: a service unreachable, missing, or on older weights."""


class EvalUnavailable(RuntimeError):
    """Rollout or reward could not serve the evaluation; the message names which and why."""
