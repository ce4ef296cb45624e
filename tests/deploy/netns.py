"""Hosts for a multi-host test: one Linux network namespace per host, all on one bridge.

    with Hosts({"nats": 1, "learner": 2}, prefix="mrl") as hosts:
        hosts.ip("nats")                   # "10.78.0.1"
        hosts.popen("learner", [...])      # runs inside that host's namespace
        hosts.cut("learner"); hosts.restore("learner")   # its link down / up

Each host: a namespace with `lo` up and one veth end holding 10.78.0.N/24; the other end is
enslaved to a bridge in the root namespace, which holds 10.78.0.254 so the test itself can
reach every host. `ip netns exec` bind-mounts /etc/netns/<ns>/hosts over /etc/hosts, so
names resolve per host as they would in containers: every host knows the others by name,
and this machine's hostname resolves to the host's own address (what
MESHRL_ADVERTISE_HOST=@ip reads). Needs root and iproute2; `available()` says why not.
`Loopback` is the benchmark's stand-in where they cannot be made: every host is this one
(127.0.0.1), no names, no cuts; the drill's is loopback_hosts.LoopbackHosts (127.0.0.x each).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

SUBNET = "10.78.0"


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    probe = f"mrlprobe{os.getpid() % 100000}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"`ip netns add` refused: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False)
    return None


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def reachable(ip: str, port: int) -> bool:
    try:
        socket.create_connection((ip, port), timeout=2).close()
    except OSError:
        return False
    return True


class Hosts:
    cut_means = "its veth link set down"

    def __init__(self, numbers: dict[str, int], prefix: str = "mrl"):
        self.numbers = numbers
        tag = f"{prefix}{os.getpid() % 10000}"
        self.bridge, self.tag = f"{tag}br", tag
        self.ns = {name: f"{tag}-{name}" for name in numbers}

    def ip(self, name: str) -> str:
        return f"{SUBNET}.{self.numbers[name]}"

    def _veth(self, name: str) -> str:
        return f"{self.tag}v{self.numbers[name]}"  # root side; ≤ 15 characters

    def __enter__(self) -> "Hosts":
        sh("ip", "link", "add", self.bridge, "type", "bridge")
        sh("ip", "addr", "add", f"{SUBNET}.254/24", "dev", self.bridge)
        sh("ip", "link", "set", self.bridge, "up")
        for name in self.numbers:
            self._add_host(name)
        return self

    def _add_host(self, name: str) -> None:
        ns, outer, inner = self.ns[name], self._veth(name), f"{self._veth(name)}n"
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
        sh("ip", "link", "set", inner, "netns", ns)
        sh("ip", "-n", ns, "addr", "add", f"{self.ip(name)}/24", "dev", inner)
        sh("ip", "-n", ns, "link", "set", inner, "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "link", "set", outer, "master", self.bridge, "up")
        etc = Path("/etc/netns") / ns
        etc.mkdir(parents=True, exist_ok=True)
        others = "".join(f"{self.ip(n)} {n}\n" for n in self.numbers)
        (etc / "hosts").write_text(f"127.0.0.1 localhost\n{self.ip(name)} {socket.gethostname()}\n{others}")

    def service_env(self, name: str, env: dict[str, str]) -> dict[str, str]:
        return env  # compose's as is: names resolve, `@ip` is the host's own address

    def popen(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", self.ns[name], *argv], **kw)

    def cut(self, name: str) -> None:
        sh("ip", "link", "set", self._veth(name), "down")

    def restore(self, name: str) -> None:
        sh("ip", "link", "set", self._veth(name), "up")

    def is_cut(self, name: str, port: int) -> bool:
        return not reachable(self.ip(name), port)

    def __exit__(self, *exc) -> None:
        for name, ns in self.ns.items():
            subprocess.run(["ip", "link", "del", self._veth(name)], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
            shutil.rmtree(Path("/etc/netns") / ns, ignore_errors=True)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


class Loopback:
    """Hosts' interface where namespaces cannot be made: every host is 127.0.0.1 here."""

    def __init__(self, numbers: dict[str, int]):
        self.numbers = numbers

    def ip(self, name: str) -> str:
        return "127.0.0.1"

    def service_env(self, name: str, env: dict[str, str]) -> dict[str, str]:
        return env

    def popen(self, name: str, argv: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(argv, **kw)

    def __enter__(self) -> "Loopback":
        return self

    def __exit__(self, *exc) -> None:
        pass
