"""What a sandboxed program sees of the host's filesystem: its interpreter, the interpreter's
standard library and the shared libraries they load, read-only, and nothing else.

init.py builds a new root from a View (an empty tmpfs, these paths bound read-only into it,
the top-level symlinks such as /lib -> usr/lib recreated, private /tmp, /var/tmp, /run/lock
and /dev/shm) and pivots into it, so the checkout, datasets, home directories and every
other world-readable host file are simply absent. The libraries come from `ldd` on the
interpreter and its extension modules (lib-dynload), so a new stdlib module that needs a new
library is covered without a list kept here. site-packages is hidden: the tool offers the
standard library, never the service's own packages (meshrl among them).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

# Asked of the interpreter itself (-S: before site adds anything), so a venv, a pyenv build or
# Debian's python each report their own layout.
PROBE = (
    "import json, os, sys, sysconfig\n"
    "print(json.dumps({'stdlib': os.path.dirname(os.__file__),\n"
    "    'dynload': [p for p in sys.path if p.endswith('lib-dynload')],\n"
    "    'site': sorted({sysconfig.get_path('purelib'), sysconfig.get_path('platlib')})}))\n"
)
LDD_ENV = {"LC_ALL": "C", "PATH": "/usr/bin:/bin"}  # ldd is libc-bin's, always there
EXTRA_FILES = ("/etc/ld.so.cache",)  # where the loader finds libraries (a list of paths, no data)


@dataclass(frozen=True)
class View:
    python: str  # the interpreter's real path (the one exec'd inside)
    binds: tuple[str, ...]  # host paths (dirs or files) bound read-only at the same path
    links: tuple[tuple[str, str], ...]  # top-level symlinks of / recreated: (path, target)
    hide: tuple[str, ...]  # paths under a bind that stay hidden (site-packages)


def shared_libraries(files: list[str]) -> set[str]:
    """Every library path `ldd` names for `files` (as named and as resolved), the loader included."""
    done = subprocess.run(["ldd", *files], capture_output=True, text=True, timeout=30, env=LDD_ENV)
    found = set()
    for line in done.stdout.splitlines():
        if line.endswith(":"):  # "file:" header of a multi-file answer
            continue
        found.update(word for word in line.split() if word.startswith("/"))
    return found


def top_level_links() -> tuple[tuple[str, str], ...]:
    """/bin -> usr/bin and the like: a path named through them resolves the same inside."""
    return tuple(sorted((str(p), os.readlink(p)) for p in Path("/").iterdir() if p.is_symlink()))


def minimal(paths: set[str]) -> tuple[str, ...]:
    """The paths without those already under another one of them."""
    kept: list[str] = []
    for path in sorted(paths):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return tuple(kept)


@functools.cache
def interpreter_view(python: str) -> View:
    real = os.path.realpath(python)
    probe = subprocess.run([real, "-I", "-S", "-c", PROBE], capture_output=True, text=True, timeout=30, check=True)
    layout = json.loads(probe.stdout)
    modules = [str(p) for d in layout["dynload"] for p in sorted(Path(d).glob("*.so"))]
    dirs = {os.path.realpath(layout["stdlib"]), *map(os.path.realpath, layout["dynload"])}
    for lib in shared_libraries([real, *modules]):
        dirs |= {os.path.realpath(os.path.dirname(lib)), os.path.dirname(os.path.realpath(lib))}
    binds = minimal(dirs | {real} | {f for f in EXTRA_FILES if os.path.isfile(f)})
    hide = tuple(s for s in layout["site"] if os.path.isdir(s) and any(s.startswith(b + "/") for b in binds))
    return View(real, binds, top_level_links(), hide)
