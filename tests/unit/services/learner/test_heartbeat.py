"""The learner's heartbeat: RUN_DIR/learner.heartbeat is touched at once and then every few
seconds while it runs, so `meshrl status` reads a run in a long first step as alive; stopping
it leaves the file (final/, not the heartbeat, says a run finished).

    .venv/bin/python -m pytest -q tests/unit/services/learner/test_heartbeat.py
"""

import asyncio
import os

from meshrl.run.summary import running_elsewhere
from meshrl.run_layout import RunDir
from meshrl.services.learner.heartbeat import start_heartbeat, stop_heartbeat


def test_the_heartbeat_is_touched_at_start_and_again_while_the_learner_runs(tmp_path):
    run = RunDir(tmp_path)

    async def scenario() -> tuple[bool, float, bool]:
        beat = start_heartbeat(run, every_s=0.05)
        there_at_once = run.heartbeat.is_file()
        os.utime(run.heartbeat, (1000.0, 1000.0))  # as if touched long ago
        await asyncio.sleep(0.2)
        touched_again = run.heartbeat.stat().st_mtime
        await stop_heartbeat(beat)
        return there_at_once, touched_again, beat.cancelled()

    there_at_once, touched_again, stopped = asyncio.run(scenario())
    assert there_at_once and touched_again > 1000.0 and stopped
    assert run.heartbeat.is_file()  # left at the end
    assert running_elsewhere(run) is not None  # a fresh heartbeat, no launcher here: running
