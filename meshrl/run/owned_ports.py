"""Whether an address in a run dir's `launcher.json` is served by that run's own processes.

The gateway connects to the run's NATS (as the run's admin, password and client certificate)
and to its learner's control port (with the run's certificate) at the addresses launcher.json
names; a run can rewrite that file, and so send those credentials, and the gateway's calls,
wherever it likes. So before it connects, the gateway asks the kernel: is a socket listening
on that port held by the launcher (whose pid presence.py's launch lock confirmed) or one of its
descendants (the embedded nats-server, the learner)?

    served_by_tree("127.0.0.1:4222", launcher_pid)    # True / False

Linux /proc: LISTEN sockets of /proc/net/tcp{,6} by port → their inodes → which process
holds an fd `socket:[inode]`. Loopback and wildcard listeners only count for a loopback host.
"""

from __future__ import annotations

import os
from pathlib import Path

PROC = Path("/proc")
LISTEN = "0A"


def _host_port(address: str) -> tuple[str, int]:
    rest = address.split("://", 1)[-1].split(",")[0].rsplit("@", 1)[-1]
    host, _, port = rest.rpartition(":")
    return host.strip("[]"), int(port)


def listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on `port` (any local address, IPv4 or IPv6)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def descendants(pid: int) -> set[int]:
    """`pid` and every process below it."""
    parents: dict[int, int] = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    tree, grew = {pid}, True
    while grew:
        grown = tree | {child for child, parent in parents.items() if parent in tree}
        grew, tree = grown != tree, grown
    return tree


def socket_inodes(pid: int) -> set[str]:
    try:
        fds = list((PROC / str(pid) / "fd").iterdir())
    except OSError:
        return set()
    inodes = set()
    for fd in fds:
        try:
            link = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def served_by_tree(address: str, pid: int) -> bool:
    """Whether a process of `pid`'s tree listens on `address`'s port (host must be this host's loopback)."""
    try:
        host, port = _host_port(address)
    except ValueError:
        return False
    if host not in ("127.0.0.1", "localhost", "::1"):
        return False
    wanted = listening_inodes(port)
    return bool(wanted) and any(socket_inodes(p) & wanted for p in descendants(pid))
