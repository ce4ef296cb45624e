"""Can this machine play the run's textarena game? One library worker started in
`environment.textarena.python`, the game made and one trial game reset there (handlers.init),
the worker stopped: the check `meshrl train` makes before any service starts and
`meshrl doctor`'s row (a missing interpreter, textarena not installed, a game not registered
or for more players is one line)."""

from __future__ import annotations

from meshrl.services.environment.adapters.textarena.paths import HANDLERS, init_params, python_of
from meshrl.transport.library import WorkerDied, WorkerError, WorkerStartError, WorkerTimeout, run_once


class ProbeFailed(RuntimeError):
    """The game cannot be played here; the message is one line saying why."""


def probe(block) -> str:
    """A one-line summary of the game made; ProbeFailed when it cannot be."""
    try:
        info = run_once(
            python_of(block), HANDLERS, "info", {}, name="textarena",
            init_params=init_params(block), timeout_s=block.start_timeout_s,
        )  # fmt: skip
    except (WorkerStartError, WorkerError, WorkerTimeout, WorkerDied) as err:
        raise ProbeFailed(f"environment.textarena (game {block.game!r}): {err}") from None
    return f"{info['game']} (textarena {info['textarena']}) plays for one player"
