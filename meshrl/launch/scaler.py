"""The launcher's side of `meshrl scale`: keep as many replicas of each service as asked.

    scaler = Scaler(sup, run_dir, {"rollout": 1, "reward": 1}, command_for=make_command)
    ... scaler.tick()   # on every launcher tick: read RUN_DIR/scale.json when it changed, reconcile

A reconciler, like a Kubernetes ReplicaSet on one machine: on each tick it compares the
wanted count of a service with the replicas it keeps and
  - starts the missing ones with the lowest free replica ids (`rollout-1`, `rollout-2`, ...);
    a new rollout replica loads the run's current weights before it takes any prompt;
  - retires the highest ids beyond the count: SIGTERM to the replica's process group, so it
    naks what it holds (another replica takes it at once), withdraws its run-KV entry and
    exits; SIGKILL after `grace_s` if it has not. A retired replica is marked finished in the
    supervisor, so the keeper never restarts it.
A replica id still draining is not started again until its old process is gone (next tick).

`command_for(service, replica) -> (argv, env)` makes a replica's command line, the same one
the launcher used at start. `on_change(counts)` hears every new set of wanted counts (the
launcher writes them to launcher.json for `meshrl status`); `on_left(key)` hears each retired
replica once it is gone (the launcher frees the shared memory its vLLM engine left).

    with scaling(sup, run_dir, LauncherInfo(...), command_for=make_command) as scaler:
        ...   # RUN_DIR/launcher.json names this launcher and the counts kept, for the block
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from tqdm import tqdm

from meshrl.launch.supervisor import Supervisor
from meshrl.run.presence import LauncherInfo, launcher_presence, write_presence
from meshrl.run.scale import REQUEST_FILE, SCALABLE, read_request

Command = tuple[list[str], dict[str, str]]


def say(message: str) -> None:
    tqdm.write(f"meshrl: {message}", file=sys.stderr)


def replica_number(key: str) -> int:
    return int(key.rsplit("-", 1)[1])


def lowest_free(taken: list[int], how_many: int) -> list[int]:
    free, i = [], 0
    while len(free) < how_many:
        if i not in taken:
            free.append(i)
        i += 1
    return free


class Scaler:
    def __init__(
        self,
        sup: Supervisor,
        run_dir: Path,
        counts: dict[str, int],
        *,
        command_for: Callable[[str, int], Command],
        grace_s: float = 15.0,
        on_change: Callable[[dict[str, int]], None] = lambda counts: None,
        on_left: Callable[[str], None] = lambda key: None,
    ):
        self.sup, self.command_for, self.grace_s = sup, command_for, grace_s
        self.on_change, self.on_left = on_change, on_left
        self.run_dir, self.wanted = Path(run_dir), dict(counts)
        self.retired: dict[str, float | None] = {}  # key -> when to SIGKILL it (None: done)
        self.request_path = self.run_dir / REQUEST_FILE
        self.request_path.unlink(missing_ok=True)  # a request to an earlier launcher is not ours
        self.seen_mtime: int | None = None

    def tick(self) -> None:
        if self._request_changed():
            self._take_request()
        for service in self.wanted:
            self._reconcile(service)
        self._watch_retired()

    def kept(self, service: str) -> list[int]:
        """Replica numbers of `service` it keeps: running, or dead and due a keeper restart."""
        return sorted(
            replica_number(key)
            for key in self.sup.children
            if key.rsplit("-", 1)[0] == service and key not in self.retired
        )

    def _request_changed(self) -> bool:
        try:
            mtime = self.request_path.stat().st_mtime_ns
        except FileNotFoundError:
            return False
        changed, self.seen_mtime = mtime != self.seen_mtime, mtime
        return changed

    def _take_request(self) -> None:
        changes = {
            name: count
            for name, count in read_request(self.run_dir).items()
            if name in self.wanted and count != self.wanted[name]
        }
        for name, count in changes.items():
            say(f"scaling {name}: ×{self.wanted[name]} → ×{count} (asked in {self.request_path})")
            self.wanted[name] = count
        if changes:
            self.on_change(dict(self.wanted))

    def _reconcile(self, service: str) -> None:
        kept, wanted = self.kept(service), self.wanted[service]
        for replica in lowest_free(kept, wanted - len(kept)):
            self._add(service, replica)
        for replica in kept[wanted:]:  # sorted: the highest ids go first
            self._retire(f"{service}-{replica}")

    def _add(self, service: str, replica: int) -> None:
        key = f"{service}-{replica}"
        old = self.sup.children.get(key)
        if old is not None and old.group_alive():
            return  # its previous process is still draining; start it once that one is gone
        argv, env = self.command_for(service, replica)
        if old is None:
            self.sup.start(service, argv, replica=replica, env=env)
        else:
            self.sup.restart(key, argv)  # a retired id comes back: same log, after a marker
        self.retired.pop(key, None)
        say(f"started {key} (log: {self.sup.children[key].log_path})")

    def _retire(self, key: str) -> None:
        self.sup.finished.add(key)  # the keeper leaves it alone from now on
        self.sup.children[key].signal_group(signal.SIGTERM)
        self.retired[key] = time.monotonic() + self.grace_s
        say(f"stopping {key}: SIGTERM, it hands back its work and leaves (SIGKILL after {self.grace_s:g} s)")

    def _watch_retired(self) -> None:
        """Report each retired replica once gone; SIGKILL one still there after its grace."""
        for key, kill_at in self.retired.items():
            child = self.sup.children[key]
            if kill_at is None:
                continue
            if not child.group_alive():
                child.log_file.close()
                say(f"{key} left (exit code {child.popen.returncode})")
                self.retired[key] = None
                self.on_left(key)
            elif time.monotonic() > kill_at:
                child.signal_group(signal.SIGKILL)


def started_counts(sup: Supervisor) -> dict[str, int]:
    """How many replicas of each scalable service the supervisor started (those with any)."""
    counts = {name: sum(1 for key in sup.children if key.rsplit("-", 1)[0] == name) for name in SCALABLE}
    return {name: n for name, n in counts.items() if n}


@contextlib.contextmanager
def scaling(
    sup: Supervisor,
    run_dir: Path,
    presence: LauncherInfo,
    *,
    command_for: Callable[[str, int], Command],
    on_left: Callable[[str], None] = lambda key: None,
    grace_s: float = 15.0,
) -> Iterator[Scaler]:
    """A Scaler over the replicas started so far, announced in RUN_DIR/launcher.json (which
    `meshrl scale` and `meshrl status` look for) for as long as the block runs."""
    presence.replicas = started_counts(sup)

    def keep_counts(wanted: dict[str, int]) -> None:
        presence.replicas = wanted
        write_presence(run_dir, presence)

    scaler = Scaler(
        sup,
        run_dir,
        presence.replicas,
        command_for=command_for,
        grace_s=grace_s,
        on_change=keep_counts,
        on_left=on_left,
    )
    with launcher_presence(run_dir, presence):
        yield scaler
