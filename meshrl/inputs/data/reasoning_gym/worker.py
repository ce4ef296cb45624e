"""A library's child process, seen from meshrl: `HandlerProcess(python).call(op, **args)` sends one
JSON request line to handler.py running under `python` (the adapter venv's interpreter) and
returns its result; the child is started on first use and kept (one per process that uses it:
the `meshrl data` command, or each reward replica), restarted after it died or timed out.

    worker = HandlerProcess(adapter_python("reasoning_gym"))
    worker.call("generate", tasks=[{"name": "leg_counting"}], n=8, seed=0)

`adapter_python(name)`: `$MESHRL_ADAPTER_VENVS/NAME/bin/python` when that variable is set, else
`.venv-adapters/NAME/bin/python` in the checkout meshrl runs from (what
`bash scripts/adapter_venv.sh NAME` builds). A missing interpreter is a LaunchError that says
the command building it.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import threading
from pathlib import Path

from meshrl.errors import LaunchError

HANDLER = Path(__file__).with_name("handler.py")
REPO = Path(__file__).resolve().parents[4]  # meshrl/inputs/data/reasoning_gym/worker.py -> the checkout
START_TIMEOUT_S = 120.0  # the first request waits for the library's import too


class HandlerError(RuntimeError):
    """The child refused a request (a BadRequest line), died, or timed out; the message says which."""


def adapter_python(name: str) -> str:
    root = os.environ.get("MESHRL_ADAPTER_VENVS")
    return str((Path(root) if root else REPO / ".venv-adapters") / name / "bin" / "python")


def checked_python(python: str | None, name: str = "reasoning_gym") -> str:
    """`python` (default: the adapter venv's), refused in one line when it is not there."""
    path = python or adapter_python(name)
    if not os.access(path, os.X_OK):
        hint = (
            "" if python or os.environ.get("MESHRL_ADAPTER_VENVS") else " (or set MESHRL_ADAPTER_VENVS to its folder)"
        )
        raise LaunchError(
            f"{name} interpreter {path} is missing; build it with: bash scripts/adapter_venv.sh {name}{hint}"
        )
    return path


class HandlerProcess:
    def __init__(self, python: str, script: Path = HANDLER):
        self.python, self.script = python, script
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=1)  # the child's last word
        self.lock = threading.Lock()  # one request at a time: replies come back in order

    def start(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.lines = queue.Queue()
        self.proc = subprocess.Popen(
            [self.python, str(self.script)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        self.stderr_reader = threading.Thread(target=self._keep_last, args=(self.proc, self.stderr), daemon=True)
        self.stderr_reader.start()

    @staticmethod
    def _read(proc: subprocess.Popen, lines: queue.Queue) -> None:
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)  # the child's stdout closed: it exited

    @staticmethod
    def _keep_last(proc: subprocess.Popen, last: collections.deque) -> None:
        for line in proc.stderr:  # drained, so a chatty library never blocks on a full pipe
            if line.strip():
                last.append(line.strip())

    def call(self, op: str, timeout_s: float = START_TIMEOUT_S, **args):
        """The child's result for one request; HandlerError when it refused, died or took too long."""
        with self.lock:
            self.start()
            try:
                self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
                self.proc.stdin.flush()
                line = self.lines.get(timeout=timeout_s)
            except (BrokenPipeError, queue.Empty):
                line = None
            if line is None:
                self.close()  # dead or stuck: the next call starts a fresh child
                said = f" (its last line: {self.stderr[-1]})" if self.stderr else ""
                raise HandlerError(
                    f"{self.script.name} under {self.python} gave no reply to {op!r} within {timeout_s:g}s{said}"
                )
            reply = json.loads(line)
            if not reply.get("ok"):
                raise HandlerError(reply.get("error", "refused without a reason"))
            return reply["result"]

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.stderr_reader.join(timeout=2.0)  # its last line, read before it is quoted
            self.proc = None
