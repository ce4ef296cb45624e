"""A private folder for vLLM's zmq sockets, removed when the engine stops.

vLLM names each zmq ipc endpoint it binds `$VLLM_RPC_BASE_PATH/<uuid4>` (default: the temp
dir): seven per engine (front end and engine core, the worker's message queues), and the
socket files stay after the sockets close, so every engine's life left seven files in /tmp
(2,656 on one test host after a day). Each engine gets its own folder instead, named with
the pid of the process that made it, and removes it when it shuts down; a replica killed
by SIGKILL cannot, so the next engine made on the host removes the folders of processes
that are gone.

The variable is set only while vLLM builds its engine: the front end picks its addresses
then, and the processes it spawns inherit the environment of that moment.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import psutil

BASE_PATH_ENV = "VLLM_RPC_BASE_PATH"
PREFIX = "meshrl-vllm-ipc-"


def make_ipc_folder(root: Path | None = None) -> Path:
    """A fresh folder `PREFIX<pid>-<random>` under `root` (the temp dir); orphans go first."""
    root = Path(root or tempfile.gettempdir())
    remove_orphans(root)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root))


def remove_orphans(root: Path) -> list[Path]:
    """Remove the folders whose maker's pid is gone; the ones removed."""
    removed = []
    for folder in root.glob(f"{PREFIX}*"):
        pid = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


@contextlib.contextmanager
def vllm_binds_in(folder: Path) -> Iterator[None]:
    """vLLM engines built inside this block put their zmq sockets in `folder`."""
    before = os.environ.get(BASE_PATH_ENV)
    os.environ[BASE_PATH_ENV] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(BASE_PATH_ENV, None)
        else:
            os.environ[BASE_PATH_ENV] = before
