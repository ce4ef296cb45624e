"""reasoning-gym's handlers script (handler.py) run by the library worker
(meshrl/transport/library) under the reasoning-gym venv's python:

    generate(python, specs, n=8, seed=0)      # one child for one call (`meshrl data reasoning-gym`)
    child = ScorerChild(python); child.call("score", {"items": [...]}, timeout_s=30)  # kept (a reward replica)

The interpreter is the adapter venv's (`meshrl/transport/library/venvs.py`: the named one,
else `$MESHRL_ADAPTER_VENVS/reasoning_gym`, else the checkout's `.venv-adapters`). A missing interpreter is a LaunchError that says
the command building it. A request reasoning-gym refuses (an unknown task or key) is a
ValueError with the handler's one line; a child that could not start, died or timed out a
LaunchError (generate) or HandlerError (ScorerChild) saying so.
"""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

from meshrl.errors import LaunchError
from meshrl.transport.library import LibraryWorker, WorkerDied, WorkerError, WorkerStartError, WorkerTimeout, run_once
from meshrl.transport.library.venvs import VENVS_ENV, adapter_python

NAME = "reasoning_gym"
HANDLERS = str(Path(__file__).with_name("handler.py"))
START_TIMEOUT_S = 120.0  # the child's start waits for the library's import too


class HandlerError(RuntimeError):
    """The scorer child raised, died, timed out or could not start; the message says which."""


def checked_python(python: str | None, name: str = "reasoning_gym") -> str:
    """`python` (default: the adapter venv's), refused in one line when it is not there."""
    path = python or adapter_python(name)
    if not os.access(path, os.X_OK):
        hint = "" if python or os.environ.get(VENVS_ENV) else " (or set MESHRL_ADAPTER_VENVS to its folder)"
        raise LaunchError(
            f"{name} interpreter {path} is missing; build it with: bash scripts/adapter_venv.sh {name}{hint}"
        )
    return path


def generate(python: str, specs: list[dict], *, n: int, seed: int, prompt: str = "direct") -> dict:
    """The handler's generate() in a child started for this one call."""
    params = {"tasks": specs, "n": n, "seed": seed, "prompt": prompt}
    try:
        return run_once(python, HANDLERS, "generate", params, name=NAME, timeout_s=START_TIMEOUT_S)
    except WorkerError as err:  # the handler refused the request: its own one line
        raise ValueError(err.message if err.kind == "BadRequest" else str(err)) from None
    except (WorkerStartError, WorkerTimeout, WorkerDied) as err:
        raise LaunchError(str(err)) from None


class ScorerChild:
    """One kept child for synchronous callers (reward rules run in threads): the library
    worker on an event loop of its own; started on first use, restarted after it died."""

    def __init__(self, python: str, script: str | None = None):
        self.worker = LibraryWorker(python, script or HANDLERS, NAME, start_timeout_s=START_TIMEOUT_S)
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="reasoning-gym-scorer", daemon=True).start()
        self.lock = threading.Lock()  # one start at a time

    def call(self, method: str, params: dict, timeout_s: float):
        """The handler's result; HandlerError when it raised, timed out, died or could not start."""
        try:
            return asyncio.run_coroutine_threadsafe(self._call(method, params, timeout_s), self.loop).result()
        except (WorkerError, WorkerTimeout, WorkerDied, WorkerStartError) as err:
            raise HandlerError(str(err)) from None

    async def _call(self, method: str, params: dict, timeout_s: float):
        if not self.worker.alive:
            await self.worker.start()
        try:
            return await self.worker.call(method, params, timeout_s=timeout_s)
        except WorkerTimeout:
            await self.worker.close()  # stuck: the next call starts a fresh child
            raise

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.worker.close(), self.loop).result(timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
