"""PID 1 of a sandbox: set up the namespace, run the program as a throwaway user, reap.

Started by run.py as `unshare --pid --net --mount --fork --kill-child --mount-proc python -I -S
init.py` (stdlib only: -S, no site-packages); stdin is one line of JSON (the spec, kept off
the command line, which the program could read in /proc/1/cmdline), then the program's source.
It runs as root inside fresh PID, network and mount namespaces (root on the host; or, in
"userns" mode, root of a new user namespace) and:

1. mounts a size-limited tmpfs on /tmp and /dev/shm (the throwaway working dir is /tmp/work,
   gone with the namespace), and hides each path in spec["hide"] (the run dir, secret files)
   under an empty read-only tmpfs or /dev/null;
2. writes the program to /tmp/work/main.py and forks; the child sets the rlimits (CPU time,
   address space, processes, file size, open files, no core), drops to spec["uid"] (when
   given: root mode) with no supplementary groups, and execs the interpreter on it with
   spec["env"] only;
3. reaps every process until the program exits, then exits with its code (128+signal when
   killed). PID 1 leaving makes the kernel kill whatever the program left running (a fork
   bomb's children), and --kill-child kills PID 1 if run.py kills unshare (timeout, output cap).
"""

import ctypes
import json
import os
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_BIND, MS_REMOUNT = 1, 2, 4, 4096, 32
LIMITS = {
    "cpu": resource.RLIMIT_CPU,
    "as": resource.RLIMIT_AS,
    "nproc": resource.RLIMIT_NPROC,
    "fsize": resource.RLIMIT_FSIZE,
    "nofile": resource.RLIMIT_NOFILE,
    "core": resource.RLIMIT_CORE,
}
libc = ctypes.CDLL(None, use_errno=True)


def mount(source: str, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    if (
        libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        )
        != 0
    ):
        err = ctypes.get_errno()
        raise OSError(err, f"mount {fstype or source} on {target}: {os.strerror(err)}")


def hide(path: str) -> None:
    """An empty read-only tmpfs over a directory, /dev/null over a file."""
    if os.path.isdir(path):
        mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=000")
    elif os.path.exists(path):
        mount("/dev/null", path, None, MS_BIND, None)


def prepare(spec: dict, source: bytes) -> None:
    size = f"size={spec['tmp_bytes']},mode=1777"
    for target in ("/tmp", "/dev/shm"):
        if os.path.isdir(target):
            mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, size)
    for path in spec["hide"]:
        hide(path)
    os.mkdir("/tmp/work", 0o700)
    with open("/tmp/work/main.py", "wb") as f:
        f.write(source)
    if spec.get("uid") is not None:
        os.chown("/tmp/work", spec["uid"], spec["gid"])
        os.chown("/tmp/work/main.py", spec["uid"], spec["gid"])


def become_program(spec: dict) -> None:
    """In the forked child: limits, the throwaway user, exec. Never returns."""
    try:
        for name, value in spec["rlimits"].items():
            resource.setrlimit(LIMITS[name], (value, value + 1 if name == "cpu" else value))
        if spec.get("uid") is not None:
            os.setgroups([])
            os.setgid(spec["gid"])
            os.setuid(spec["uid"])
        os.chdir("/tmp/work")
        os.umask(0o077)
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.execve(spec["python"], [spec["python"], *spec["python_flags"], "main.py"], spec["env"])
    except BaseException as err:  # noqa: BLE001 - report and leave: nothing else may run here
        os.write(2, f"sandbox: cannot start the program: {err}\n".encode())
        os._exit(126)


def reap(program: int) -> int:
    """Wait for every process (PID 1 inherits orphans) until the program exits; its status."""
    while True:
        pid, status = os.wait()
        if pid == program:
            return os.waitstatus_to_exitcode(status)


def main() -> int:
    spec = json.loads(sys.stdin.buffer.readline())
    source = sys.stdin.buffer.read(spec["max_source_bytes"] + 1)
    if len(source) > spec["max_source_bytes"]:
        os.write(2, f"sandbox: the program is over {spec['max_source_bytes']} bytes\n".encode())
        return 125
    prepare(spec, source)
    program = os.fork()
    if program == 0:
        become_program(spec)
    code = reap(program)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
