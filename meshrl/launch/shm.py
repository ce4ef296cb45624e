"""Shared-memory segments a run's processes made in /dev/shm, freed when they are gone.

Who makes them: `multiprocessing.shared_memory.SharedMemory` names its segments `psm_<hex>`;
vLLM's engine core makes one per engine for its executor's message queue
(`VLLM_MQ_MAX_CHUNK_BYTES_MB` 16 MiB × 10 chunks = 160 MiB), and torch multiprocessing can
too; named semaphores (`sem.mp-*` of multiprocessing, `sem.loky-*` of loky, joblib's process
pool) live there as well. Python's resource tracker unlinks them at a clean exit; a SIGKILL of the process group
kills the tracker with it, and the 160 MiB of tmpfs stay taken until reboot.

How they are found: /dev/shm files carry no owner pid, so the tracker looks at who maps
them. `scan(children)` reads /proc/PID/maps of every process in each child's process group
(the group, not the parent tree: an engine core whose parent was killed is reparented but
keeps its group) and remembers each mapped `psm_*` file with the child that mapped it first.
`free(keys)` unlinks the remembered segments of those children that no live process of the
run maps any more (a restart); `free()` with no keys unlinks all of them (the end of a run).

At the end of a run, once every process stopped: `freed_segments(tracker)` frees what the
tracker noted, `freed_shm(run_id)` removes the run's own files in /dev/shm (the weights file a
killed learner left).

A launcher killed with SIGKILL frees nothing, so the tracker keeps what it noted in a record
(RUN_DIR/shm_segments.json, rewritten as it changes); the next launcher of the run calls
`reclaim(record)` before it starts anything, and unlinks each noted segment that no process
on the host maps any more (the names are random: a noted one is the run's).

A segment made and leaked between two scans (every SHM_SCAN_S, processes.py) by a process
that lived less than that is never seen mapped, so it is attributed by time instead: `free`
also unlinks every segment of this user made since the tracker started that no process on the
host maps (`strays`; older than `stray_grace_s`, past the instant between a segment's creation
and its first mapping). Such a segment is a leak whoever made it, so one that another run on
the host leaked meanwhile goes too.

Simplification: a launcher killed with SIGKILL keeps no record of strays; the next one frees
only what its predecessor noted. Linux only (/proc); elsewhere nothing is found.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import psutil

from meshrl.run.presence import write_atomically
from meshrl.transport.bus.subjects import shm_prefix

log = logging.getLogger("meshrl.launch")
# multiprocessing's shared memory, and the named semaphores of multiprocessing and of loky
# (joblib's workers): a SIGKILLed holder leaves each, and none is unlinked by anyone else
SEGMENT_PATTERNS = ("psm_*", "sem.mp-*", "sem.loky-*")


def pids_by_group(pgids: Iterable[int]) -> dict[int, list[int]]:
    """Every live process of each process group in `pgids` (one pass over /proc)."""
    found: dict[int, list[int]] = {pgid: [] for pgid in pgids}
    for pid in psutil.pids():
        with contextlib.suppress(OSError):
            pgid = os.getpgid(pid)
            if pgid in found:
                found[pgid].append(pid)
    return found


def mapped_segments(pid: int, root: Path = Path("/dev/shm"), patterns: Iterable[str] = SEGMENT_PATTERNS) -> set[str]:
    """Names of the files under `root` matching `patterns` that process `pid` maps now."""
    prefix = f"{root}/"
    try:
        lines = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:  # gone, or not ours to read
        return set()
    names = set()
    for line in lines:
        fields = line.split(maxsplit=5)  # address perms offset dev inode [path]
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.startswith(prefix) and not path.endswith("(deleted)"):
            name = path[len(prefix) :]
            if "/" not in name and any(fnmatch.fnmatch(name, p) for p in patterns):
                names.add(name)
    return names


def mapped_anywhere(root: Path = Path("/dev/shm"), patterns: Iterable[str] = SEGMENT_PATTERNS) -> set[str]:
    """The segments any process this user can see maps now."""
    return set().union(*(mapped_segments(pid, root, patterns) for pid in psutil.pids()))


def reclaim(record: Path, root: Path = Path("/dev/shm")) -> list[str]:
    """Unlink the segments a previous launcher noted in `record` that nothing maps now; the
    names removed. The record goes: what is still mapped is the new tracker's to note again."""
    try:
        noted = json.loads(Path(record).read_text())
    except (OSError, ValueError):
        return []
    in_use = mapped_anywhere(root) if noted else set()
    removed = []
    for name in noted:
        if "/" not in name and name not in in_use:
            with contextlib.suppress(FileNotFoundError):
                (Path(root) / name).unlink()
                removed.append(name)
    Path(record).unlink(missing_ok=True)
    if removed:
        log.info("freed %d shared-memory segment(s) a previous launcher of the run left: %s", len(removed), removed)
    return removed


class ShmTracker:
    def __init__(
        self, root: Path = Path("/dev/shm"), patterns: Iterable[str] = SEGMENT_PATTERNS, record: Path | None = None
    ):
        self.root, self.patterns, self.record = Path(root), tuple(patterns), record
        self.owners: dict[str, str] = {}  # segment name -> key of the child that mapped it first
        self.started = time.time()  # segments made since then and mapped by nobody are the run's leaks
        self.stray_grace_s = 2.0

    def _save(self) -> None:
        """Keep the record in step with `owners` (for the next launcher, should this one be killed)."""
        if self.record is not None:
            write_atomically(self.record, json.dumps(self.owners) + "\n")

    def mapped_by(self, pgids: Iterable[int]) -> dict[int, set[str]]:
        """For each process group: the tracked-pattern segments its processes map now."""
        mapped = {}
        for pgid, pids in pids_by_group(pgids).items():
            mapped[pgid] = set().union(*(mapped_segments(pid, self.root, self.patterns) for pid in pids))
        return mapped

    def scan(self, groups: Mapping[str, int]) -> None:
        """Remember what each child's process group (`key -> pgid`) maps now."""
        mapped = self.mapped_by(groups.values())
        before = len(self.owners)
        for key, pgid in groups.items():
            for name in mapped[pgid]:
                self.owners.setdefault(name, key)
        if len(self.owners) != before:
            self._save()

    def strays(self) -> set[str]:
        """This user's segments made since the tracker started (and `stray_grace_s` ago or more)
        that no scan noted and no process on the host maps: leaks of a process that died
        between two scans."""
        now, made = time.time(), set()
        for pattern in self.patterns:
            for path in self.root.glob(pattern):
                with contextlib.suppress(OSError):
                    stat = path.stat()
                    if stat.st_uid == os.getuid() and self.started <= stat.st_ctime <= now - self.stray_grace_s:
                        made.add(path.name)
        made -= set(self.owners)
        return made - mapped_anywhere(self.root, self.patterns) if made else set()

    def free(self, keys: Iterable[str] | None = None, live: Mapping[str, int] = {}) -> list[str]:
        """Unlink the segments of `keys` (all when None) that no group in `live` maps, and the
        strays; the names removed."""
        keys = None if keys is None else set(keys)
        in_use = set().union(*self.mapped_by(live.values()).values())
        removed = []
        for name, owner in list(self.owners.items()):
            if (keys is None or owner in keys) and name not in in_use:
                with contextlib.suppress(FileNotFoundError):
                    (self.root / name).unlink()
                    removed.append(name)
                del self.owners[name]
        for name in sorted(self.strays()):
            with contextlib.suppress(FileNotFoundError):
                (self.root / name).unlink()
                removed.append(name)
        self._save()
        if removed:
            log.info(
                "freed %d shared-memory segment(s) left by %s: %s",
                len(removed),
                "the run" if keys is None else ", ".join(sorted(keys)),
                removed,
            )
        return removed


@contextlib.contextmanager
def freed_segments(tracker: ShmTracker) -> Iterator[ShmTracker]:
    """After every process stopped: unlink the segments the run's processes mapped."""
    try:
        yield tracker
    finally:
        tracker.free()


@contextlib.contextmanager
def freed_shm(run_id: str, root: Path = Path("/dev/shm")) -> Iterator[None]:
    """After every process stopped: remove the files the run made in /dev/shm (tmpfs pages are
    memory). The learner removes its own on exit; this covers one that was killed."""
    try:
        yield
    finally:
        for path in root.glob(f"{shm_prefix(run_id)}*"):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
