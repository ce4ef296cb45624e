"""A start that failed before training anything leaves a run dir that starts afresh.

    with cleared_if_nothing_trained(run_dir, run_id, resume=False):
        ...   # the run; if it raises with no step logged and no checkpoint saved, the files
              # that mark a run dir as a run's (config.yaml, metrics.jsonl, groups.jsonl) move
              # to RUN_DIR/logs/failed-start-<run id>/, so `meshrl train` takes the dir again

`meshrl train` refuses a dir that holds a run (meshrl.launch.run_dir.check_run_dir), so
that a new run never appends to another's metrics and ledger. A start that died at once (a
bad setting found late, a service that cannot start) has nothing to continue, yet left those
files: without this its own dir would refuse the retry, and the hint would offer a resume
from a checkpoint that does not exist. Nothing is deleted: the moved files and every log stay
for reading. A resume keeps its files (the run existed before this start).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from pathlib import Path

from meshrl.inputs.checkpoint.layout import step_dirs
from meshrl.run.records import read_rows
from meshrl.run_layout import RUN_MARKS, RunDir

log = logging.getLogger("meshrl.launch")


def nothing_trained(run_dir: Path) -> bool:
    """No step logged in metrics.jsonl, no group trained in the ledger, no finished checkpoint."""
    run = RunDir(run_dir)
    trained = any(r.get("event") == "trained" for r in read_rows(run.ledger))
    return not read_rows(run.metrics) and not trained and not step_dirs(run_dir)


def failed_start_dir(run_dir: Path, run_id: str) -> Path:
    return RunDir(run_dir).logs / f"failed-start-{run_id}"


def set_aside(run_dir: Path, run_id: str) -> Path:
    """Move the files that mark the dir as a run's into logs/failed-start-<run id>/; that folder."""
    aside = failed_start_dir(run_dir, run_id)
    aside.mkdir(parents=True, exist_ok=True)
    for name in RUN_MARKS:
        if (run_dir / name).exists():
            shutil.move(run_dir / name, aside / name)
    return aside


@contextlib.contextmanager
def cleared_if_nothing_trained(run_dir: Path, run_id: str, *, resume: bool):
    """On an error leaving the block: a fresh start that trained nothing is set aside (above)."""
    try:
        yield
    except BaseException:
        if not resume and nothing_trained(run_dir):
            aside = set_aside(run_dir, run_id)
            log.info("the start failed before training anything: its files are in %s", aside)
        raise


def how_to_go_on(run_dir: Path, run_id: str) -> str:
    """The next command after a failed run: a resume only where a checkpoint or a step exists."""
    if nothing_trained(run_dir):
        return (
            f"start it again with `meshrl train` and the same run.dir (nothing was trained; this start's "
            f"config and logs are kept in {failed_start_dir(run_dir, run_id)})"
        )
    if not step_dirs(run_dir):
        return f"continue the run with `meshrl train --resume {run_dir}` (no checkpoint yet: it starts again at step 0)"
    return f"continue the run from its newest checkpoint with `meshrl train --resume {run_dir}`"
