"""The parent side of a library worker: a child process in another venv, called over JSON lines.

An environment library (verifiers, reasoning-gym, textarena, ...) brings dependencies meshrl
must not share, so it runs in its own interpreter, in a child started here; its handlers
script (a plain file that imports nothing of meshrl) is served by child.py.

    worker = LibraryWorker(python=".venv-adapters/verifiers/bin/python", script=HANDLERS, name="verifiers")
    info = await worker.start({"module": "my_env"})      # the script's init(**params), if any
    answer = await worker.call("reset", {"episode_id": "g/0"}, timeout_s=30)
    await worker.close()

Failures are typed so callers can map them: WorkerStartError (one line, for exit 2 at start),
WorkerError (a handler raised; the child goes on), WorkerTimeout, WorkerDied (every pending
call fails at once, with the tail of the child's stderr; `start` again restarts it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections import deque
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHILD = str(Path(__file__).with_name("child.py"))
MAX_LINE_BYTES = 64 << 20
STDERR_TAIL_LINES = 20


class WorkerStartError(RuntimeError):
    """The child could not start: no such interpreter, the library not installed, init raised."""


class WorkerError(RuntimeError):
    """A handler raised; `kind` is its exception's class name."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind, self.message = kind, message


class WorkerTimeout(TimeoutError):
    """The child did not answer a call in time."""


class WorkerDied(RuntimeError):
    """The child exited while calls were pending (or before a call was made)."""


class LibraryWorker:
    """One child process serving a handlers script; calls may overlap."""

    def __init__(self, python: str, script: str, name: str, env: dict | None = None, start_timeout_s: float = 60.0):
        self.python, self.script, self.name = str(python), str(script), name
        self.env, self.start_timeout_s = env, start_timeout_s
        self.proc: asyncio.subprocess.Process | None = None
        self.pending: dict[int, asyncio.Future] = {}
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.next_id = 0
        self.tasks: list[asyncio.Task] = []

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self, init_params: dict | None = None) -> dict:
        """Spawn (or respawn) the child, wait for it to be ready, run the script's init."""
        await self.close()
        self._check_interpreter()
        self.proc = await asyncio.create_subprocess_exec(
            self.python, CHILD, self.script, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._child_env(), limit=MAX_LINE_BYTES,
        )  # fmt: skip
        self.tasks = [asyncio.create_task(self._drain_stderr(self.proc))]
        await self._await_ready()
        self.tasks.append(asyncio.create_task(self._read_answers()))
        try:
            return await self.call("init", init_params or {}, timeout_s=self.start_timeout_s) or {}
        except (WorkerError, WorkerTimeout, WorkerDied) as err:
            await self.close()
            raise WorkerStartError(f"{self.name}: its set-up failed: {err}") from None

    async def call(self, method: str, params: dict | None = None, timeout_s: float = 30.0) -> Any:
        if not self.alive:
            raise WorkerDied(f"{self.name} worker is not running{self._tail()}")
        self.next_id += 1
        call_id, future = self.next_id, asyncio.get_running_loop().create_future()
        self.pending[call_id] = future
        line = json.dumps({"id": call_id, "method": method, "params": params or {}}, allow_nan=False)
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            await self.proc.stdin.drain()
            return await asyncio.wait_for(future, timeout_s)
        except (BrokenPipeError, ConnectionResetError):
            raise WorkerDied(f"{self.name} worker exited{self._tail()}") from None
        except asyncio.TimeoutError:
            raise WorkerTimeout(f"{self.name} worker did not answer {method!r} within {timeout_s:g} s") from None
        finally:
            self.pending.pop(call_id, None)

    async def close(self) -> None:
        """Stop the child (EOF, then SIGKILL after a grace period); fail what is pending."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.returncode is None:
            proc.stdin.close()
            try:
                await asyncio.wait_for(proc.wait(), 5.0)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):  # it may exit on its own just now
                    proc.kill()
                await proc.wait()
        for task in self.tasks:
            task.cancel()
        self._fail_pending(WorkerDied(f"{self.name} worker was stopped"))

    def _check_interpreter(self) -> None:
        if not os.access(self.python, os.X_OK):
            raise WorkerStartError(
                f"{self.name}: no python interpreter at {self.python}; build the adapter's venv with "
                f"`bash scripts/adapter_venv.sh {self.name}` or point the setting at one"
            )

    def _child_env(self) -> dict:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "VIRTUAL_ENV"))}
        env.update({"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"})
        env.update(self.env or {})
        return env

    async def _await_ready(self) -> None:
        try:
            first = await asyncio.wait_for(self.proc.stdout.readline(), self.start_timeout_s)
        except asyncio.TimeoutError:
            await self.close()
            raise WorkerStartError(f"{self.name}: the worker did not start within {self.start_timeout_s:g} s") from None
        message = _parse(first) or {}
        if message.get("ready") is True:
            return
        await self.close()
        reason = message.get("fatal") or f"it exited before it was ready{self._tail()}"
        raise WorkerStartError(f"{self.name}: {reason} (interpreter {self.python})")

    async def _read_answers(self) -> None:
        proc = self.proc
        try:
            await self._dispatch(proc)
        except (ValueError, asyncio.LimitOverrunError):  # an answer over MAX_LINE_BYTES: the protocol is lost
            proc.kill()
        await proc.wait()
        self._fail_pending(WorkerDied(f"{self.name} worker exited with {proc.returncode}{self._tail()}"))

    async def _dispatch(self, proc: asyncio.subprocess.Process) -> None:
        while line := await proc.stdout.readline():
            message = _parse(line)
            future = self.pending.get(message.get("id")) if message else None
            if future is None or future.done():
                continue
            if "error" in message:
                error = message["error"] if isinstance(message["error"], dict) else {}
                future.set_exception(WorkerError(str(error.get("kind", "Error")), str(error.get("message", ""))))
            else:
                future.set_result(message.get("result"))

    async def _drain_stderr(self, proc: asyncio.subprocess.Process) -> None:
        """Keep the child's last words for error messages, and log them (the library's prints)."""
        while line := await proc.stderr.readline():
            text = line.decode(errors="replace").rstrip()
            self.stderr_tail.append(text)
            log.debug("%s: %s", self.name, text)

    def _fail_pending(self, err: Exception) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(err)

    def _tail(self) -> str:
        lines = [line for line in self.stderr_tail if line.strip()]
        return f"; its last words: {lines[-1][:300]}" if lines else ""


def _parse(line: bytes) -> dict | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def run_once(python: str, script: str, method: str, params: dict, *, name: str = "library",
             init_params: dict | None = None, timeout_s: float = 300.0) -> Any:  # fmt: skip
    """Start a worker, make one call, stop it (for CLI commands and start-up checks)."""

    async def once() -> Any:
        worker = LibraryWorker(python, script, name, start_timeout_s=timeout_s)
        try:
            await worker.start(init_params)
            return await worker.call(method, params, timeout_s=timeout_s)
        finally:
            await worker.close()

    return asyncio.run(once())
