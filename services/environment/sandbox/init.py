"""PID 1 of a sandbox: set up the namespace, run the program as a throwaway user, reap.

Started by run.py as `unshare --pid --net --mount --fork --kill-child --mount-proc python -I -S
init.py` (stdlib only: -S, no site-packages); stdin is one line of JSON (the spec, kept off
the command line, which the program could read in /proc/1/cmdline), then the program's source.
It runs as root inside fresh PID, network and mount namespaces (root on the host; or, in
"userns" mode, root of a new user namespace) and:

1. builds a new root (view.py says what goes in): an empty tmpfs with the interpreter, its
   stdlib and shared libraries bound read-only, /dev's null, zero, full, random and urandom,
   this namespace's /proc, and private /tmp, /var/tmp, /run/lock and /dev/shm sharing one
   size-limited tmpfs; each path in spec["hide"] (the run dir, secret files, site-packages)
   is hidden first under an empty read-only tmpfs or /dev/null, so a bind carries the hiding;
2. pivots into it and detaches the old root: the checkout, datasets, home directories and
   every other host file are gone, not merely unreadable, and nothing the program writes
   outlives the namespace (the throwaway working dir is /tmp/work);
3. writes the program to /tmp/work/main.py and forks; the child sets the rlimits (CPU time,
   address space, processes, file size, open files, no core), drops to spec["uid"] (when
   given: root mode) with no supplementary groups, and execs the interpreter on it with
   spec["env"] only;
4. reaps every process until the program exits, then exits with its code (128+signal when
   killed). PID 1 leaving makes the kernel kill whatever the program left running (a fork
   bomb's children), and --kill-child kills PID 1 if run.py kills unshare (timeout, output cap).
"""

import ctypes
import json
import os
import platform
import resource
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 21
ST_RELATIME = 4096  # statvfs's bit for relatime (the other ST_ bits equal their MS_ ones)
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}  # the syscall's number (glibc has no wrapper)
# Where the new root is assembled: the old root's /tmp, shadowed in this mount namespace only
# (an interpreter under /tmp could not be bound from there).
ROOT = "/tmp"
PRIVATE = ("/tmp", "/var/tmp", "/run/lock", "/dev/shm")
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
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


def bind(source: str, target: str, writable: bool = False) -> None:
    """Bind `source` at `target` (made empty first), read-only unless `writable`, never setuid.
    The remount keeps the flags the source mount already has (a user namespace may not drop them)."""
    if os.path.isdir(source):
        os.makedirs(target, 0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC, None)
    kept = os.statvfs(source).f_flag
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (0 if writable else MS_RDONLY | MS_NODEV)
    flags |= kept & (MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME) | (MS_RELATIME if kept & ST_RELATIME else 0)
    mount("none", target, None, flags, None)


def private_dirs(root: str, size: int) -> None:
    """/tmp, /var/tmp, /run/lock and /dev/shm of the new root: folders of one fresh tmpfs of
    `size` bytes (one budget for all), world-writable and sticky like the host's."""
    scratch = root + "/.scratch"
    os.mkdir(scratch, 0o700)
    mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=700")
    for path in PRIVATE:
        folder = f"{scratch}/{path.strip('/').replace('/', '-')}"
        os.mkdir(folder)
        os.chmod(folder, 0o1777)
        os.makedirs(root + path, 0o755)
        mount(folder, root + path, None, MS_BIND, None)
    if libc.umount2(scratch.encode(), MNT_DETACH) != 0:  # the binds keep the tmpfs alive
        raise OSError(ctypes.get_errno(), f"umount {scratch}")
    os.rmdir(scratch)


def pivot(root: str) -> None:
    """Make `root` the root and detach the old one: no path leads back to a host file."""
    os.chdir(root)
    if libc.syscall(PIVOT_ROOT[platform.machine()], b".", b".") != 0:
        raise OSError(ctypes.get_errno(), f"pivot_root {root}: {os.strerror(ctypes.get_errno())}")
    if libc.umount2(b".", MNT_DETACH) != 0:  # the old root, stacked under the new one
        raise OSError(ctypes.get_errno(), "umount the old root")
    os.chdir("/")


def new_root(spec: dict) -> None:
    """An empty tmpfs at ROOT holding only what spec["view"] names, then pivot into it."""
    for path in spec["hide"]:
        hide(path)
    mount("tmpfs", ROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    private_dirs(ROOT, spec["tmp_bytes"])
    for path, target in spec["view"]["links"]:
        os.symlink(target, ROOT + path)
    for path in spec["view"]["binds"]:
        bind(path, ROOT + path)
    for device in DEVICES:
        if os.path.exists(device):
            bind(device, ROOT + device, writable=True)
    bind("/proc", ROOT + "/proc", writable=True)  # this PID namespace's own (--mount-proc)
    pivot(ROOT)
    mount("none", "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, None)


def prepare(spec: dict, source: bytes) -> None:
    new_root(spec)
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
    # The root is built with modes of our own choosing, whatever umask the service inherited
    # (meshrl's runner sets 077 for its own files): under it /dev/null and the bound folders'
    # mount points came out 0600/0700 and the program's uid could open none of them.
    os.umask(0o022)
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
