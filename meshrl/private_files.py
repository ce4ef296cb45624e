"""Run dirs, configs, logs, checkpoints and secrets are readable by their owner only.

A run dir holds the run's NATS credentials, its config (data paths, service addresses) and
its weights; the default umask 022 made all of them world-readable. Every process that
writes into a run dir (the launcher, each service) calls `keep_new_files_private()` first,
so whatever it and its children create is 0600 / 0700 whatever the caller's umask.
"""

import os
from pathlib import Path

PRIVATE_UMASK = 0o077


def keep_new_files_private() -> None:
    os.umask(PRIVATE_UMASK)


def make_private_dir(path: Path) -> None:
    """Create `path` (and parents) if needed and make it 0700, also when it already existed."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.chmod(0o700)


def private_open_append(path: Path):
    """Open a log for appending, created 0600 whatever the caller's umask."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab")


def write_private_file(path: Path, data: bytes) -> Path:
    """Write `path` with mode 0600 from the start (a secret is never briefly world-readable),
    replacing an earlier file and its mode."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path
