"""Can this machine play the run's verifiers environment? One library worker started, the
module's load_environment(**args) called in `environment.verifiers.python`, what it loaded
summed up, the worker stopped: the check `meshrl train` makes before any service starts and
`meshrl doctor`'s row (a missing interpreter, a module not installed there, a
load_environment that raises or an environment the adapter cannot play is one line)."""

from __future__ import annotations

from meshrl.services.environment.adapters.verifiers.paths import HANDLERS, init_params, python_of
from meshrl.transport.library import WorkerDied, WorkerError, WorkerStartError, WorkerTimeout, run_once


class ProbeFailed(RuntimeError):
    """The environment cannot be loaded here; the message is one line saying why."""


def probe(block) -> str:
    """A one-line summary of what the module loads; ProbeFailed when it does not."""
    try:
        info = run_once(
            python_of(block), HANDLERS, "info", {}, name="verifiers",
            init_params=init_params(block), timeout_s=block.start_timeout_s,
        )  # fmt: skip
    except (WorkerStartError, WorkerError, WorkerTimeout, WorkerDied) as err:
        raise ProbeFailed(f"environment.verifiers (module {block.module!r}): {err}") from None
    tools = ", ".join(t["name"] for t in info["tools"]) or "none"
    rubric = ", ".join(f"{name} x {weight:g}" for name, weight in info["rubric"].items())
    return f"{info['env']} with {info['rows']['train']} train rows, tools: {tools}; rubric: {rubric}"
