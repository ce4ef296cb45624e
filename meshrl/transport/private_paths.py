"""Directories and files in shared places (/dev/shm, /tmp) that only this user can touch.

/dev/shm and /tmp are writable by every local user. A name there that another user can
predict (`/dev/shm/meshrl-<run id>`: the run id is on every command line) can be created
first by them, as a directory they own, or as a link to somewhere else. So:

- `make_private_dir(root, prefix)`: a new directory `root/prefix-<random>`, made with
  mkdir (which fails if the name exists: O_EXCL for directories), mode 0700, then checked;
- `check_private_dir(path)`: refuses a link, another owner, or group/other permissions;
- `open_private_file(path)`: opens a file inside such a directory without following a
  link at either level and refuses one that another user owns or may write;
- `fd_path(fd)`: a path that names the opened file itself (`/proc/<pid>/fd/<n>`), for a
  reader in another process (vLLM's worker): what was checked is what gets loaded, even if
  the name is replaced in between.

Owner means this process's effective uid: on one host, every service of a run runs as the
run's user.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

NO_FOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
ATTEMPTS = 8


class UnsafePath(Exception):
    """A path in a shared place is not this user's own private file or directory."""


def _describe(st: os.stat_result) -> str:
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def _check_dir_stat(path: Path, st: os.stat_result) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path} is not a directory")
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        raise UnsafePath(
            f"{path} is not private to uid {os.geteuid()} ({_describe(st)}; needs this "
            f"user's own 0700 directory): another local user may have made or opened it; "
            f"remove it and restart"
        )


def check_private_dir(path: Path) -> int:
    """Open `path` without following a link, check it is this user's 0700 directory;
    return the open directory's fd (the caller closes it). FileNotFoundError if missing."""
    try:
        fd = os.open(path, NO_FOLLOW_DIR)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise UnsafePath(f"cannot open {path} as a directory without following links: {err.strerror}") from None
    try:
        _check_dir_stat(path, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    return fd


def make_private_dir(root: Path, prefix: str) -> Path:
    """A new directory `root/prefix-<16 random hex>` that only this user can enter."""
    for _ in range(ATTEMPTS):
        path = Path(root) / f"{prefix}-{secrets.token_hex(8)}"
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue  # someone holds that name: never reuse it, draw another
        fd = os.open(path, NO_FOLLOW_DIR)
        try:
            os.fchmod(fd, 0o700)  # whatever the umask took away or left
            _check_dir_stat(path, os.fstat(fd))
        finally:
            os.close(fd)
        return path
    raise UnsafePath(f"could not create a new directory {prefix}-* under {root} in {ATTEMPTS} attempts")


def open_private_file(path: Path) -> int:
    """Open `path` read-only, following no link, and check both it and its directory are
    this user's own (the file writable by nobody else); return the fd (the caller closes it)."""
    path = Path(path)
    dir_fd = check_private_dir(path.parent)
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        raise
    except OSError as err:
        raise UnsafePath(f"cannot open {path} without following links: {err.strerror}") from None
    finally:
        os.close(dir_fd)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        raise UnsafePath(f"{path} is not a regular file of uid {os.geteuid()} that only it may write ({_describe(st)})")
    return fd


def fd_path(fd: int) -> str:
    """A path naming the open file `fd` itself, valid in any process of this user while the
    fd stays open (Linux /proc): reopening it cannot reach a file swapped in by name."""
    return f"/proc/{os.getpid()}/fd/{fd}"
