"""Start named child processes, watch them, and stop every one of them on the way out.

Each child is `<name>-<replica>` with its own log file `LOG_DIR/<name>-<replica>.log`
(stdout and stderr together, unbuffered Python) and its own environment on top of ours.
Every child leads its own process group (`start_new_session`), so stopping it also stops
what it started (vLLM's engine core, math-verify's pool, ...): SIGTERM to the group, a grace
period, then SIGKILL to whatever is left. On Linux each child also gets
`PR_SET_PDEATHSIG=SIGTERM`, so even a supervisor killed with SIGKILL takes its direct
children with it.

A child started with `stop_grace_s=` (the learner, which writes a checkpoint when told to
stop) is stopped first, alone, and given that long; then the others together.

A child that exits while the run goes on is an error: `check()` / `wait_for()` raise
`ChildDied` with its exit status and the tail of its log. `restart(key)` starts a dead child
again with the same command (or a new one), appending to the same log after a marker line;
when to restart is restarts.py's decision, not this file's.

Simplifications: a grandchild that calls setsid() itself leaves the group and is not
tracked.

Use:
    with Supervisor(run_dir / "logs") as sup, stop_on_signals():
        sup.start("reward", [sys.executable, "-m", "meshrl.services.reward", ...], replica=0)
        learner = sup.start("learner", [...])
        rc = sup.wait_for(learner.key, on_tick=progress.update)
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Callable, Iterable, Mapping, Sequence

from meshrl.errors import StopRequested
from meshrl.private_files import PRIVATE_UMASK, private_open_append

PR_SET_PDEATHSIG = 1


class ChildDied(RuntimeError):
    """A supervised process exited while the run still needed it."""

    def __init__(self, key: str, returncode: int, log_path: Path, tail: str):
        self.key, self.returncode, self.log_path, self.tail = key, returncode, log_path, tail
        how = (
            f"was killed by signal {signal.Signals(-returncode).name}"
            if returncode < 0
            else f"exited with code {returncode}"
        )
        super().__init__(
            f"{key} {how} while the run was going on; last lines of {log_path}:\n{tail or '(log is empty)'}"
        )


def _pdeathsig_preexec() -> Callable[[], None] | None:
    """A preexec_fn asking the kernel to SIGTERM the child when we die (Linux only)."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up before fork, not in the child
    return lambda: prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    key: str
    popen: subprocess.Popen
    log_path: Path
    log_file: IO = field(repr=False)
    stop_grace_s: float | None = None  # stopped first, with its own grace
    argv: list[str] = field(default_factory=list)
    env: Mapping[str, str] | None = None
    cwd: str | Path | None = None
    started_at: float = field(default_factory=time.monotonic)
    restarts: int = 0

    def ran_for_s(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self.started_at

    def alive(self) -> bool:
        return self.popen.poll() is None

    def group_alive(self) -> bool:
        """Whether any process of its group exists (the leader reaped first)."""
        self.popen.poll()
        try:
            os.killpg(self.popen.pid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)


class Supervisor:
    """Owns a set of child processes; `stop_all()` (also on `__exit__`) ends all of them."""

    def __init__(self, log_dir: str | Path, *, grace_s: float = 10.0, tail: int = 40):
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.grace_s, self.tail = grace_s, tail
        self.children: dict[str, Child] = {}
        self.finished: set[str] = set()  # children whose exit was awaited (not a death)

    def start(
        self,
        name: str,
        argv: Sequence[str],
        *,
        replica: int = 0,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        stop_grace_s: float | None = None,
    ) -> Child:
        """Start `argv` as `<name>-<replica>`, logging to `LOG_DIR/<name>-<replica>.log`."""
        key = f"{name}-{replica}"
        if key in self.children:
            raise ValueError(f"a child named {key} was already started; use another replica number")
        self.children[key] = child = self._spawn(key, list(argv), env, cwd, stop_grace_s)
        return child

    def restart(self, key: str, argv: Sequence[str] | None = None) -> Child:
        """Start dead child `key` again (same environment; `argv` or its last command line).

        What is left of its process group (a grandchild that outlived it) is stopped first,
        so two engines never run for one replica."""
        old = self.children[key]
        if old.alive():
            raise ValueError(f"{key} is still running (pid {old.popen.pid}); only a dead child restarts")
        self._stop([old], grace_s=2.0)
        argv = list(argv) if argv is not None else old.argv
        with old.log_path.open("ab") as log:
            log.write(f"\n==== meshrl launcher: restart {old.restarts + 1} of {key}: {' '.join(argv)} ====\n".encode())
        child = self._spawn(key, argv, old.env, old.cwd, old.stop_grace_s)
        child.restarts = old.restarts + 1
        self.children[key] = child
        self.finished.discard(key)
        return child

    def _spawn(
        self,
        key: str,
        argv: list[str],
        env: Mapping[str, str] | None,
        cwd: str | Path | None,
        stop_grace_s: float | None,
    ) -> Child:
        log_path = self.log_dir / f"{key}.log"
        log_file = private_open_append(log_path)
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
        try:
            popen = subprocess.Popen(
                argv,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=full_env,
                cwd=cwd,
                start_new_session=True,
                preexec_fn=_pdeathsig_preexec(),
                umask=PRIVATE_UMASK,
            )  # checkpoints, logs, traces: owner only
        except OSError as err:
            log_file.close()
            raise RuntimeError(f"could not start {key} ({argv[0]}): {err}") from err
        return Child(key, popen, log_path, log_file, stop_grace_s, argv=argv, env=env, cwd=cwd)

    def died(self, ignore: Iterable[str] = ()) -> list[Child]:
        """Children (other than `ignore`) that have exited."""
        skip = set(ignore) | self.finished
        return [c for k, c in self.children.items() if k not in skip and not c.alive()]

    def check(self, ignore: Iterable[str] = ()) -> None:
        """Raise ChildDied for the first child (not in `ignore`) that has exited."""
        for child in self.died(ignore):
            raise ChildDied(child.key, child.popen.returncode, child.log_path, tail_lines(child.log_path, self.tail))

    def wait_for(self, key: str, *, poll_s: float = 0.5, on_tick: Callable[[], None] | None = None) -> int:
        """Block until child `key` exits and return its code; any other death raises ChildDied."""
        child = self.children[key]
        while True:
            if on_tick is not None:
                on_tick()
            if (rc := child.popen.poll()) is not None:
                self.finished.add(key)
                return rc
            self.check(ignore=[key])
            time.sleep(poll_s)

    def log_tail(self, key: str) -> str:
        return tail_lines(self.children[key].log_path, self.tail)

    def stop_all(self) -> None:
        """Children with their own grace first, one by one; then SIGTERM every other child's
        group, wait up to `grace_s`, SIGKILL what is left, reap."""
        first = [c for c in self.children.values() if c.stop_grace_s is not None]
        for child in first:
            if child.group_alive():
                print(
                    f"stopping {child.key}: waiting up to {child.stop_grace_s:.0f} s for it to "
                    f"finish its step and checkpoint",
                    file=sys.stderr,
                    flush=True,
                )
            self._stop([child], child.stop_grace_s)
        self._stop([c for c in self.children.values() if c.stop_grace_s is None], self.grace_s)

    def _stop(self, children: list[Child], grace_s: float) -> None:
        for child in children:
            child.signal_group(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(c.group_alive() for c in children):
            time.sleep(0.05)
        for child in children:
            if child.group_alive():
                child.signal_group(signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.popen.wait(timeout=5)
            if not child.log_file.closed:
                child.log_file.close()

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, *exc) -> None:
        self.stop_all()


@contextlib.contextmanager
def stop_on_signals():
    """Inside: SIGTERM raises StopRequested (SIGINT already raises KeyboardInterrupt).

    Only the main thread may set handlers; elsewhere this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise StopRequested(f"received {signal.Signals(signum).name}")

    previous = signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


TAIL_BYTES = 64 * 1024  # tail_lines reads at most this much of a log (for crash reports)


def tail_lines(path: str | Path, lines: int = 30) -> str:
    """The last `lines` lines of `path` ("" if it does not exist), decoded leniently."""
    path = Path(path)
    if not path.exists():
        return ""
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - TAIL_BYTES))
        data = f.read()
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])
