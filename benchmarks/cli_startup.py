"""How long `meshrl --help` takes to start, and what it imports.

    .venv/bin/python -m benchmarks.cli_startup [--runs 10] [--repo DIR]

Runs `python -c "<the CLI's main>(['--help'])"` --runs times in fresh processes (with DIR first
on PYTHONPATH, to measure another checkout with this venv) and prints the fastest and the
median wall time, and the modules the process imported (all, and meshrl's own). The fastest
run is the least disturbed by other work on the machine; compare trees in one run of this.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

CODE = """
import sys
try:  # the tree before the house's second renovation first: this venv's editable install maps meshrl.cli here
    from meshrl.ops.cli.main import main
except ImportError:
    from meshrl.cli.main import main
try:
    main(["--help"])
except SystemExit:
    pass
sys.stderr.write(f"{len(sys.modules)} {sum(m.split('.')[0] == 'meshrl' for m in sys.modules)}\\n")
"""


def once(repo: Path) -> tuple[float, str]:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CODE], cwd=repo, env=env, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, done.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    times, modules = [], ""
    for _ in range(args.runs):
        seconds, modules = once(args.repo.resolve())
        times.append(seconds)
    total, own = modules.split()
    print(
        f"meshrl --help ({args.repo}): fastest {min(times):.3f} s, median {statistics.median(times):.3f} s "
        f"over {args.runs} runs; {total} modules imported, {own} of them meshrl's"
    )


if __name__ == "__main__":
    main()
