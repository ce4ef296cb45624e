"""Run one untrusted Python program in a sandbox and report what happened.

    sandbox = Sandbox(SandboxLimits(), detect(), hide=[run_dir, *secret_files])
    outcome = sandbox.run("print(2**10)")      # Outcome(exit_code=0, stdout="1024\\n", ...)

The program runs under `unshare` (isolation.py) with init.py as PID 1 of its namespaces:
no network (an empty network namespace: not even loopback is up), no view of the host's
processes (its own /proc), a root of its own holding only the interpreter, its stdlib and
libraries (view.py; no checkout, no datasets, no home), throwaway /tmp, /var/tmp, /run/lock
and /dev/shm, the run dir and secrets hidden as well, rlimits for CPU
time, memory, processes, file size and open files, and an environment with nothing but PATH,
HOME and locale. This process enforces the wall clock and the output cap by killing
`unshare`, whose --kill-child takes PID 1 and with it every process the program made.
Calls block (run them in a thread); at most `limits.concurrent` run at once.
"""

from __future__ import annotations

import json
import os
import queue
import selectors
import signal
import stat
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from meshrl.services.environment.sandbox.isolation import UID_BASE, Isolation, SandboxUnavailable
from meshrl.services.environment.sandbox.limits import SandboxLimits
from meshrl.services.environment.sandbox.view import View, interpreter_view

INIT = Path(__file__).with_name("init.py")
PROGRAM_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/tmp/work",
    "TMPDIR": "/tmp/work",
    "LANG": "C.UTF-8",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
}
LAUNCHER_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}  # unshare and init see no secret either


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None  # None when stopped before it exited; 128+N: killed by signal N
    stdout: str
    stderr: str
    stopped: str = ""  # why the sandbox stopped it ("" when it ended by itself)
    seconds: float = 0.0

    def for_model(self) -> str:
        """The observation: JSON with exit_code, stdout, stderr and (when stopped) why."""
        fields = {k: v for k, v in asdict(self).items() if k != "seconds" and (k != "stopped" or v)}
        return json.dumps(fields, ensure_ascii=False)


def explain(exit_code: int | None, stderr: str, limits: SandboxLimits) -> str:
    """Why the program ended, when a limit ended it."""
    if exit_code == 128 + signal.SIGXCPU:
        return f"CPU time limit ({limits.cpu_s} s)"
    if exit_code == 128 + signal.SIGKILL:
        return f"killed: CPU time limit ({limits.cpu_s} s) or memory"
    if exit_code == 128 + signal.SIGXFSZ:
        return f"file size limit ({limits.file_bytes} bytes)"
    if "MemoryError" in stderr:
        return f"memory limit ({limits.memory_bytes >> 20} MiB)"
    if exit_code == 125:
        return f"the program is over {limits.source_bytes} bytes"
    return ""


def anyone_may_run(path: str) -> bool:
    """Whether a user owning nothing can execute `path`: o+x on the file and on every directory
    above it (a venv under /root, 0700, is not: the throwaway uid could not start it)."""
    real = Path(os.path.realpath(path))
    try:
        return all(p.stat().st_mode & stat.S_IXOTH for p in [real, *real.parents])
    except OSError:
        return False


def default_python() -> str:
    """This service's interpreter when anyone may run it (the image's), else the system's."""
    for candidate in (sys.executable, "/usr/local/bin/python3", "/usr/bin/python3"):
        if anyone_may_run(candidate):
            return candidate
    return sys.executable


class Sandbox:
    def __init__(
        self,
        limits: SandboxLimits,
        isolation: Isolation,
        *,
        python: str | None = None,
        hide: Sequence[str | os.PathLike] = (),
    ):
        self.limits = limits
        self.isolation = isolation
        self.python = python or default_python()
        self.hide = [str(Path(p).resolve()) for p in hide]
        self.view = _view(self.python) if isolation.mode else None
        self.slots: queue.Queue[int] = queue.Queue()
        for slot in range(limits.concurrent):
            self.slots.put(slot)

    def spec(self, slot: int) -> dict:
        uid = UID_BASE + slot if self.isolation.mode == "root" else None
        return {
            "uid": uid,
            "gid": uid,
            "hide": [*self.hide, *self.view.hide],
            "view": {"binds": self.view.binds, "links": self.view.links},
            "rlimits": self.limits.rlimits(),
            "tmp_bytes": self.limits.tmp_bytes,
            "max_source_bytes": self.limits.source_bytes,
            "python": self.view.python,
            "python_flags": ["-I", "-u"],
            "env": PROGRAM_ENV,
        }

    def run(self, source: str) -> Outcome:
        prefix = self.isolation.command()  # SandboxUnavailable before anything runs
        slot = self.slots.get()
        try:
            return self._run(prefix, self.spec(slot), source.encode())
        finally:
            self.slots.put(slot)

    def _run(self, prefix: list[str], spec: dict, source: bytes) -> Outcome:
        started = time.monotonic()
        command = [*prefix, self.python, "-I", "-S", str(INIT)]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=LAUNCHER_ENV,
            start_new_session=True,
        )
        try:
            _feed(proc, json.dumps(spec).encode() + b"\n" + source)
            out, err, stopped = self._collect(proc, started + self.limits.wall_s)
            if not stopped:
                try:
                    proc.wait(timeout=max(0.0, started + self.limits.wall_s - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stopped = f"wall-clock limit ({self.limits.wall_s:g} s)"
        finally:
            _kill(proc)
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        code = None if stopped else proc.returncode
        return Outcome(
            code, stdout, stderr, stopped or explain(code, stderr, self.limits), round(time.monotonic() - started, 3)
        )

    def _collect(self, proc: subprocess.Popen, deadline: float) -> tuple[bytes, bytes, str]:
        """Read stdout and stderr until both close, the output cap, or the deadline."""
        chunks = {proc.stdout: bytearray(), proc.stderr: bytearray()}
        with selectors.DefaultSelector() as sel:
            for stream in chunks:
                sel.register(stream, selectors.EVENT_READ)
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    return (
                        bytes(chunks[proc.stdout]),
                        bytes(chunks[proc.stderr]),
                        f"wall-clock limit ({self.limits.wall_s:g} s)",
                    )
                for key, _ in sel.select(timeout=left):
                    data = os.read(key.fd, 65536)
                    if not data:
                        sel.unregister(key.fileobj)
                        continue
                    chunks[key.fileobj] += data
                    if sum(map(len, chunks.values())) > self.limits.output_bytes:
                        cap = self.limits.output_bytes
                        return (
                            bytes(chunks[proc.stdout][:cap]),
                            bytes(chunks[proc.stderr][:cap]),
                            f"output limit (more than {cap} bytes of stdout + stderr)",
                        )
        return bytes(chunks[proc.stdout]), bytes(chunks[proc.stderr]), ""


def _view(python: str) -> View:
    try:
        return interpreter_view(python)
    except (OSError, ValueError, subprocess.SubprocessError) as err:
        raise SandboxUnavailable(
            f"cannot work out what {python} needs inside the sandbox (its stdlib and libraries, "
            f"found with `ldd`, from libc-bin): {err}; install libc-bin or pick another interpreter"
        ) from None


def _feed(proc: subprocess.Popen, source: bytes) -> None:
    try:
        proc.stdin.write(source)
        proc.stdin.close()
    except BrokenPipeError:  # init already refused it (too big) or could not start: its stderr says
        pass


def _kill(proc: subprocess.Popen) -> None:
    """Kill unshare (--kill-child then kills PID 1, and the kernel the whole namespace)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        stream.close()
