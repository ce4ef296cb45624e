"""`meshrl status RUN_DIR | head -2`: a reader that closes early ends meshrl quietly, exit 141
(a writer ended by SIGPIPE), with no BrokenPipeError traceback on stderr.

    .venv/bin/python -m pytest -q tests/unit/cli/test_broken_pipe.py
"""

import subprocess
import sys

from tests.fixtures.run_config import write_config


def closed_early(*argv: str) -> tuple[int, str]:
    """Run `meshrl ARGV` into a pipe whose reader closes before meshrl writes (it is still
    importing): (exit status, stderr)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshrl.cli.main", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


def test_a_reader_that_closes_early_gets_no_traceback(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    write_config(run_dir, learner={"steps": 2})
    (run_dir / "launcher.lock").touch()  # a local run that ended: its summary is printed
    assert closed_early("status", str(run_dir)) == (141, "")


def test_help_into_a_closed_pipe_is_quiet_too():
    """argparse prints the help and exits 0 itself (it drops a failed write): nothing on stderr."""
    rc, err = closed_early("status", "--help")
    assert rc in (0, 141) and err == ""
