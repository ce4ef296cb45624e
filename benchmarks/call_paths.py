"""How far `meshrl train` and `meshrl status` wander through the code: the places (functions
of this repository) each command's own process calls, in the order it first reaches them, and
how many times that path returns to a file it had already left.

    .venv/bin/python -m benchmarks.call_paths [--steps 2] [--top 5]

A tiny model and data are made in a temporary dir; `meshrl train CONFIG` runs on this machine
(embedded NATS, every service a process) with Python's profiler hook on in the CLI process
only, from the import of the CLI's main module on (what the command imports counts: a module's
body is a place, `<module>`); while a second such run is live, `meshrl status RUN_DIR` is
profiled the same way. Each command is profiled in a fresh Python process of its own, so
neither inherits the other's imports. A place is a function defined under meshrl/, services/
or gateway/ (the generated stubs under meshrl/api/ excepted), counted once, at its first
call; the path is those first calls in order, and a return is a step of the path into a file
it has been in before, but not the file just left. Printed: places, returns, and the files
returned to most; then the walk a reader takes from the command's `run` (meshrl/cli/<command>.py)
down to `--depth` calls (places with at most that many repository frames between them and
`run`, module bodies and other threads left out): its stays (runs of places in one file) and
returns, and the files it comes back to most.

Another checkout (the tree before a renovation) is measured by running a copy of this file
from it with that checkout first on PYTHONPATH (see docs/benchmarks.md, "House").

Simplified: only the CLI process (the services it starts run elsewhere); a place called
again later (in the launcher's loop) does not lengthen the path.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
ROOTS = tuple(str(REPO / d) + os.sep for d in ("meshrl", "services", "gateway"))
SKIP = str(REPO / "meshrl" / "api") + os.sep
CLI = tuple(str(REPO / d) + os.sep for d in ("meshrl/cli", "meshrl/ops/cli"))


def cli_main():
    try:  # the tree before the house's second renovation (first: the editable install maps meshrl.cli here)
        from meshrl.ops.cli.main import main
    except ImportError:
        from meshrl.cli.main import main
    return main


def depth_below_run(frame) -> int | None:
    """Repository frames from `frame` up to the command's `run` (0: `run` itself); None outside it."""
    depth = 0
    while frame is not None:
        code = frame.f_code
        if code.co_name == "run" and code.co_filename.startswith(CLI):
            return depth
        depth += code.co_filename.startswith(ROOTS)
        frame = frame.f_back
    return None


class FirstCalls:
    """sys.setprofile hook: (file, function, depth below `run`) of each repository function at its first call."""

    def __init__(self):
        self.seen, self.path = set(), []

    def __call__(self, frame, event, arg):
        if event != "call":
            return
        code = frame.f_code
        name = code.co_filename
        if name.startswith(ROOTS) and not name.startswith(SKIP):
            place = (os.path.relpath(name, REPO), code.co_qualname)
            if place not in self.seen:
                self.seen.add(place)
                self.path.append((*place, depth_below_run(frame)))

    def run(self, fn, *args):
        threading.setprofile(self)
        sys.setprofile(self)
        try:
            return fn(*args)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)


def returns(path: list[tuple[str, str]]) -> tuple[int, collections.Counter]:
    files = [f for f, _ in path]
    visited, count, into = set(), 0, collections.Counter()
    for prev, cur in zip([None, *files], files):
        if cur != prev and cur in visited:
            count += 1
            into[cur] += 1
        visited.add(cur)
    return count, into


def make_inputs(root: Path, steps: int) -> dict:
    from meshrl.inputs.data.arithmetic import arithmetic_rows
    from meshrl.inputs.data.load import write_rows
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    return {
        "model": {"path": str(build_tiny_model_dir(root / "model"))},
        "data": {"train": str(write_rows(root / "train.jsonl", arithmetic_rows(64, seed=0))), "max_prompt_tokens": 128},
        "algorithm": {"preset": "grpo"},
        "rollout": {"sampling": {"group_size": 4, "max_tokens": 8}, "kv_cache_gb": 1.0, "max_model_len": 256},
        "reward": {"components": [{"name": "vowel", "kind": "regex", "weight": 1.0, "params": {"pattern": "[aeiou]"}}]},
        "learner": {"steps": steps, "prompts_per_step": 2},
        "trainer": {"micro_batch_size": 8},
    }


def write_config(root: Path, base: dict, name: str, steps: int) -> tuple[Path, Path]:
    run_dir = root / name
    cfg = {**base, "run": {"name": name, "dir": str(run_dir)}, "learner": {**base["learner"], "steps": steps}}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, run_dir


def profile_here(argv: list[str], out: Path) -> int:
    """In this (fresh) process: `meshrl ARGV` under the hook, from the CLI's import on; the
    path goes to `out` as JSON."""
    calls = FirstCalls()
    rc = calls.run(lambda: cli_main()(argv))
    out.write_text(json.dumps(calls.path))
    return rc


def profile(argv: list[str], out: Path) -> list:
    """`meshrl ARGV` profiled in a fresh Python process; the path of places it took."""
    cmd = [sys.executable, "-m", "benchmarks.call_paths", "--profile-into", str(out), "--", *argv]
    rc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL).returncode
    assert rc == 0, f"meshrl {' '.join(argv)} exited {rc}"
    return [tuple(place) for place in json.loads(out.read_text())]


def walk(path: list, depth: int) -> list[tuple[str, str]]:
    """The places a reader meets from the command's `run` down to `depth` calls."""
    return [(f, q) for f, q, d in path if d is not None and d <= depth and q != "<module>"]


def profile_train(root: Path, base: dict, steps: int) -> list:
    config, _ = write_config(root, base, "train", steps)
    return profile(["train", str(config)], root / "train-path.json")


def profile_status(root: Path, base: dict) -> list:
    config, run_dir = write_config(root, base, "live", 200)
    live = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from benchmarks.call_paths import cli_main; sys.exit(cli_main()(sys.argv[1:]))",
            "train",
            str(config),
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_steps(run_dir / "metrics.jsonl", 1, timeout_s=600)
        return profile(["status", str(run_dir)], root / "status-path.json")
    finally:
        live.send_signal(signal.SIGTERM)
        live.wait(timeout=120)


def wait_for_steps(metrics: Path, n: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if metrics.is_file() and len(metrics.read_text().splitlines()) >= n:
            return
        time.sleep(1.0)
    raise TimeoutError(f"no {n} steps in {metrics} within {timeout_s:.0f} s")


def report(command: str, path: list, top: int, depth: int) -> None:
    places = [(f, q) for f, q, _ in path]
    count, into = returns(places)
    files = len({f for f, _ in places})
    print(f"{command}: {len(places)} places in {files} files, {count} returns to a file already left")
    for file, n in into.most_common(top):
        print(f"    {n:3d} × {file}")
    read = walk(path, depth)
    stays = sum(1 for i, (f, _) in enumerate(read) if i == 0 or read[i - 1][0] != f)
    count, into = returns(read)
    print(f"  walk from its run() to depth {depth}: {len(read)} places, {stays} stays, {count} returns")
    for file, n in into.most_common(top):
        print(f"    {n:3d} × {file}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--depth", type=int, default=3, help="how deep the walk from the command's run() goes")
    parser.add_argument("--show", action="store_true", help="print every place of both paths")
    parser.add_argument("--profile-into", type=Path, help=argparse.SUPPRESS)  # the child's side of profile()
    parser.add_argument("argv", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.profile_into:
        return profile_here(args.argv, args.profile_into)
    with tempfile.TemporaryDirectory(prefix="meshrl-paths-") as tmp:
        root = Path(tmp)
        base = make_inputs(root, args.steps)
        paths = {"meshrl train": profile_train(root, base, args.steps), "meshrl status": profile_status(root, base)}
    for command, path in paths.items():
        report(command, path, args.top, args.depth)
        if args.show:
            print("\n".join(f"      {f}:{q}  (depth {d})" for f, q, d in path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
