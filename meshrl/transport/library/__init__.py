"""Library workers: an environment library run in its own venv, in a child process, called
over JSON lines (worker.py: the parent; child.py: the child, standard library only)."""

from meshrl.transport.library.worker import (
    LibraryWorker,
    WorkerDied,
    WorkerError,
    WorkerStartError,
    WorkerTimeout,
    run_once,
)

__all__ = ["LibraryWorker", "WorkerDied", "WorkerError", "WorkerStartError", "WorkerTimeout", "run_once"]
