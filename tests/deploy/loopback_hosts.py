"""Hosts where network namespaces cannot be made: each host its own loopback address.

    with LoopbackHosts({"nats": 1, "learner": 2}) as hosts:
        hosts.ip("nats")                     # "127.0.0.11" (127.0.0.1 stays localhost)
        hosts.service_env("learner", env)    # binds and advertises 127.0.0.12, NATS by address
        hosts.cut("learner"); hosts.restore("learner")   # SIGSTOP / SIGCONT of its processes

The same interface as netns.Hosts, without root: every service listens on, and announces,
its host's own 127.0.0.x (MESHRL_BIND_HOST / MESHRL_ADVERTISE_HOST), so each dials the
others at distinct addresses, not at localhost. What it cannot do: give each host its own
network stack, its own /etc/hosts (names like `nats` do not resolve, so the NATS url is
rewritten to the address), or cut a link. `cut` freezes the host instead: SIGSTOP to the
process groups started on it. Its peers then see what a dead link shows them, silence:
requests hang, NATS pings and JetStream acks go unanswered, its pending messages are
redelivered after their ack wait. What differs: the kernel still accepts TCP connections to
its ports, and nothing is reset when it thaws.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

BASE = 10  # host N is 127.0.0.(10+N)


class LoopbackHosts:
    cut_means = "frozen with SIGSTOP (no root: no link to cut)"

    def __init__(self, numbers: dict[str, int]):
        self.numbers = numbers
        self.procs: dict[str, list[subprocess.Popen]] = {name: [] for name in numbers}
        self.frozen: set[int] = set()

    def ip(self, name: str) -> str:
        return f"127.0.0.{BASE + self.numbers[name]}"

    def service_env(self, name: str, env: dict[str, str]) -> dict[str, str]:
        """`env` (compose's) for a service on host `name`: its own address, NATS's by address."""
        url = env.get("MESHRL_NATS_URL", "").replace("://nats:", f"://{self.ip('nats')}:")
        return {
            **env,
            "MESHRL_NATS_URL": url,
            "MESHRL_BIND_HOST": self.ip(name),
            "MESHRL_ADVERTISE_HOST": self.ip(name),
        }

    def popen(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(argv, **kw)
        self.procs[name].append(proc)
        return proc

    def _groups(self, name: str) -> set[int]:
        groups = {os.getpgid(p.pid) for p in self.procs[name] if p.poll() is None}
        if os.getpgrp() in groups:
            raise RuntimeError(
                f"{name}'s processes share this test's process group: "
                f"start them with start_new_session=True to freeze them"
            )
        return groups

    def cut(self, name: str, wait_s: float = 5.0) -> None:
        """Freeze `name`; return once every process of its groups is stopped (or wait_s passed)."""
        for group in self._groups(name):
            os.killpg(group, signal.SIGSTOP)
            self.frozen.add(group)
        deadline = time.monotonic() + wait_s
        while not self.is_cut(name) and time.monotonic() < deadline:
            time.sleep(0.1)

    def restore(self, name: str) -> None:
        for group in self._groups(name):
            os.killpg(group, signal.SIGCONT)
            self.frozen.discard(group)

    def is_cut(self, name: str, port: int = 0) -> bool:
        """Whether every process of `name`'s groups is stopped (`port`: netns.Hosts's signature)."""
        groups = self._groups(name)
        states = [(pid, state) for pid, pgid, state in process_states() if pgid in groups]
        return bool(states) and all(stopped(pid, state) for pid, state in states)

    def __enter__(self) -> "LoopbackHosts":
        return self

    def __exit__(self, *exc) -> None:
        for group in list(self.frozen):  # a test that failed mid-cut leaves nothing stopped
            try:
                os.killpg(group, signal.SIGCONT)
            except ProcessLookupError:
                pass


def process_states() -> list[tuple[int, int, str]]:
    """(pid, process group, state letter) of every process, from /proc/<pid>/stat."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        found.append((int(stat.parent.name), int(fields[2]), fields[0]))
    return found


def stopped(pid: int, state: str) -> bool:
    """Stopped, or inside the kernel (D: a vfork parent waits on its stopped child) with the
    SIGSTOP pending that stops it the moment it leaves."""
    if state in "Tt":
        return True
    if state != "D":
        return False
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    pending = 0
    for line in status.splitlines():
        if line.startswith(("SigPnd:", "ShdPnd:")):
            pending |= int(line.split()[1], 16)
    return bool(pending & (1 << (signal.SIGSTOP - 1)))
