"""RUN_DIR/learner.heartbeat, touched while the learner runs.

metrics.jsonl is written only at the end of a step, and a learner under compose or
Kubernetes logs to stdout, not to the run dir: during a first step of several minutes the
run dir alone would read as a run that died (and `meshrl status` would offer a resume that
starts a second learner on a live run). The heartbeat's mtime says the learner is alive
between steps (read by meshrl.run.summary.running_elsewhere). It is left at the end: final/
says a run finished, the heartbeat's age says when its learner was last alive.

    beat = start_heartbeat(RunDir(cfg.run.dir))
    ...
    await stop_heartbeat(beat)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from meshrl.run_layout import RunDir

EVERY_S = 20.0  # well inside meshrl.run.summary.LIVE_WITHIN_S

log = logging.getLogger("meshrl.learner")


def touch(run: RunDir) -> None:
    """One beat; a run dir that cannot be written is logged, never fatal (the run goes on)."""
    try:
        run.heartbeat.touch()
    except OSError as err:
        log.warning("cannot touch %s: %s", run.heartbeat, err)


async def beat_forever(run: RunDir, every_s: float) -> None:
    while True:
        await asyncio.sleep(every_s)
        touch(run)


def start_heartbeat(run: RunDir, every_s: float = EVERY_S) -> asyncio.Task:
    """Beat now (before the model loads) and every `every_s` on the running loop."""
    touch(run)
    return asyncio.ensure_future(beat_forever(run, every_s))


async def stop_heartbeat(task: asyncio.Task) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
