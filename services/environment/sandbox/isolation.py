"""How a sandbox is isolated on this host, decided once at start-up by trying it.

- "root": the service runs as root (CAP_SYS_ADMIN): new PID, network and mount namespaces,
  and the program runs as a throwaway uid (one per concurrent slot, owning nothing), so the
  run dir (0700) and secret files (0600) are unreadable to it by their modes as well as hidden.
- "userns": not root, but unprivileged user namespaces are allowed: the same namespaces under
  a new user namespace; the program keeps the service's uid (mapped to root inside), so the
  run dir and secret files are hidden by mounts (init.py) rather than by their modes.
- neither (e.g. a container without CAP_SYS_ADMIN whose seccomp profile refuses unshare):
  there is no network isolation we can enforce, so the python tool refuses to run and says
  how to get one. It never runs a program without a network namespace.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass

NAMESPACES = ["--pid", "--net", "--mount", "--fork", "--kill-child", "--mount-proc"]
UID_BASE = 1_900_000_000  # throwaway uids: far above any real account's


@dataclass(frozen=True)
class Isolation:
    mode: str  # "root", "userns" or "" (unavailable)
    reason: str = ""  # why unavailable

    def command(self) -> list[str]:
        """The unshare prefix of a sandbox's command line."""
        if not self.mode:
            raise SandboxUnavailable(self.reason)
        user = ["--user", "--map-root-user"] if self.mode == "userns" else []
        return ["unshare", *user, *NAMESPACES]


class SandboxUnavailable(RuntimeError):
    pass


def _works(prefix: list[str]) -> str:
    """'' when `prefix + ['true']` runs, else the error."""
    try:
        done = subprocess.run(
            [*prefix, "true"], capture_output=True, text=True, timeout=10, env={"PATH": "/usr/bin:/bin"}
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    return "" if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


@functools.cache
def detect(mode: str = "auto") -> Isolation:
    """The isolation to use: `mode` "auto" tries root then userns; "root"/"userns" force one."""
    if shutil.which("unshare") is None:
        return Isolation("", "the sandbox needs util-linux's `unshare` on PATH (apt-get install util-linux)")
    tried = []
    for candidate in ["root", "userns"] if mode == "auto" else [mode]:
        if candidate == "root" and os.geteuid() != 0:
            tried.append("root: the service is not running as root")
            continue
        error = _works(Isolation(candidate).command())
        if not error:
            return Isolation(candidate)
        tried.append(f"{candidate}: {error}")
    return Isolation(
        "",
        "cannot make network/PID/mount namespaces here (" + "; ".join(tried) + "): run the "
        "environment service as root with CAP_SYS_ADMIN, or allow unprivileged user namespaces "
        "(sysctl kernel.unprivileged_userns_clone=1; in Kubernetes a pod with hostUsers: false "
        "or an unconfined seccomp profile), or leave the python tool out",
    )
