"""A property-based fuzz of `meshrl train CONFIG [key=value ...] --dry-run` (issue 31, point 6):
for every generated config file, overrides and stray arguments the command exits 0 with the
resolved config on stdout, or exits 2 with one line on stderr; never a traceback or another
status. Most cases run through `main()` in this process; a few as real `meshrl` processes.

A fixed set of cases each run (derandomize); the count is in docs/security.md. Strategies:
tests/fixtures/fuzz_configs.py.

Run: .venv/bin/python -m pytest tests/unit/cli/test_fuzz_train_startup.py -q
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from meshrl.cli.main import main
from tests.fixtures.fuzz_configs import fuzz, overrides, yaml_texts

IN_PROCESS_CASES = 150
PROCESS_CASES = 3
FOLDER = Path(tempfile.mkdtemp(prefix="meshrl-fuzz-cli-"))
STRAY = st.lists(
    st.sampled_from(["--run-dir", "--resume", str(FOLDER), "/nonexistent", "-x", "--", "a=b", "=", "--dry-run"])
    | st.text(max_size=8),
    max_size=2,
)


def argv(text: str, items: list[str], stray: list[str]) -> list[str]:
    path = FOLDER / "fuzz.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return ["train", str(path), *items, *stray, "--dry-run"]


def check(status: int, out: str, err: str) -> None:
    """0 with a config on stdout, or 2 with one line on stderr."""
    assert "Traceback" not in err, err
    if status == 0:
        assert isinstance(yaml.safe_load(out.partition("\n---\n")[0]), dict), out
        return
    assert status == 2, (status, err)
    assert err.startswith("meshrl") and err.count("\n") == 1 and err.endswith("\n"), err


@fuzz(IN_PROCESS_CASES)
@given(yaml_texts(), overrides(), STRAY)
def test_train_dry_run_in_process(text, items, stray):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv(text, items, stray))
        except SystemExit as exit_:  # argparse's usage errors
            status = exit_.code
    check(status, out.getvalue(), err.getvalue())


@fuzz(PROCESS_CASES)
@given(yaml_texts(), overrides())
def test_train_dry_run_as_a_process(text, items):
    items = [i for i in items if "\x00" not in i]  # the OS refuses NUL in an argument before meshrl runs
    done = subprocess.run(
        [sys.executable, "-m", "meshrl.cli.main", *argv(text, items, [])],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=120,
    )
    check(done.returncode, done.stdout, done.stderr)
