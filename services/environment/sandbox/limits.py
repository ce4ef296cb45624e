"""What one sandboxed program may use. Every bound is enforced by the kernel (rlimits,
namespaces, a tmpfs size) or by run.py (wall clock, output), never by the program."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1 << 20


@dataclass(frozen=True)
class SandboxLimits:
    cpu_s: int = 5  # CPU seconds per process (RLIMIT_CPU: SIGXCPU, then SIGKILL a second later)
    wall_s: float = 10.0  # the whole run, from start to the last byte of output
    memory_bytes: int = 1024 * MIB  # address space per process (RLIMIT_AS): a big allocation is MemoryError
    processes: int = 32  # processes of the throwaway user (RLIMIT_NPROC): a fork bomb hits it
    output_bytes: int = 64 * 1024  # stdout + stderr; more stops the program
    file_bytes: int = 16 * MIB  # largest file it may write (RLIMIT_FSIZE)
    tmp_bytes: int = 32 * MIB  # its /tmp and /dev/shm (tmpfs, gone after the run)
    open_files: int = 64  # RLIMIT_NOFILE
    source_bytes: int = 64 * 1024  # the program's text
    concurrent: int = 2  # sandboxes running at once per service (more wait their turn)

    def rlimits(self) -> dict[str, int]:
        return {
            "cpu": self.cpu_s,
            "as": self.memory_bytes,
            "nproc": self.processes,
            "fsize": self.file_bytes,
            "nofile": self.open_files,
            "core": 0,
        }
