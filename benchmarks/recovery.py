"""Recovery on the real mesh (issue 10): what each fault costs, the throughput lost while a
rollout replica is down, and how long a new rollout replica takes to its first group.

Every figure comes from a real `meshrl train` run (learner, rollout with vLLM, reward,
reference; embedded NATS, or a three-node NATS cluster for its fault) on the tiny model
(meshrl.inputs.models.tiny) and the arithmetic prompts, driven by the chaos suite's own
machinery (tests/chaos/scenario.py's run_scenario, the faults of tests/chaos/faults.py):
  1. recovery, one run per fault (kill -9 of a rollout replica of two, the reward, the
     reference, the learner, the nats-server, the learner's node of a three-node cluster;
     SIGSTOP of a rollout replica): seconds from the fault to the next finished step, steps
     lost, redeliveries, drops, restarts (the chaos suite's table);
  2. throughput, one open-ended run with two rollout replicas (4 prompts × 8 samples of up to
     32 tokens a step): kill -9 rollout-1 during step 25 (the launcher restarts it); groups
     gathered per minute before the kill, while it is down (until the learner gathers the
     restarted replica's first group) and after it rejoined (until the scale-up below);
  3. join time, in the same run: `meshrl scale RUN_DIR rollout=3` once AFTER_GROUPS groups
     were gathered after the rejoin; the seconds from the new replica's process start to its
     "loaded version N" acknowledgement and to its first group gathered; then the run is
     stopped (SIGTERM to the launcher).

Simplifications: one run of each, one after the other, on whatever the machine is doing
(the load average is printed; a shared 2-core host is noisy: compare only within one run);
"first group" is when the learner gathered it (the ledger records no generation time), so
it includes the wait for the learner's next step; two prompts a step, so a window's
groups/min moves in steps of two groups.

    .venv/bin/python -m benchmarks.recovery
    .venv/bin/python -m benchmarks.recovery --faults reward,nats-node --skip-throughput
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from meshrl.inputs.models.tiny import build_tiny_model_dir
from tests.chaos import report
from tests.chaos.faults import CASES, run_case
from tests.chaos.scenario import Fault, rows, run_scenario, wait_for

# The throughput run is stopped (SIGTERM to the launcher) once measured: a vLLM replica's
# start takes 60-100+ s on a loaded host, which no fixed step count matches.
THROUGHPUT_STEPS = 10_000
# Heavier steps than the chaos suite's, so generation (what a lost replica slows) counts.
THROUGHPUT_CONFIG = ("rollout.replicas=2", "learner.prompts_per_step=4", "rollout.sampling.max_tokens=32")
# Windows of tens of seconds each (a step takes 1-2 s here): the kill after the warm-up steps,
# the scale-up 25 steps after the rejoin.
FAULT_STEP = 25
AFTER_GROUPS = 100


def prepare(root: Path) -> tuple[Path, dict[str, str]]:
    """The tiny model and the arithmetic prompts, as the chaos suite's fixtures make them."""
    data = {
        "train": str(write_rows(root / "train.jsonl", arithmetic_rows(128, seed=0))),
        "eval": str(write_rows(root / "eval.jsonl", arithmetic_rows(16, seed=1))),
    }
    return build_tiny_model_dir(root / "tiny_model"), data


def workdir(root: Path, name: str) -> Path:
    """A fresh dir for one run (what pytest's tmp_path is to the chaos tests)."""
    (root / name).mkdir()
    return root / name


def recovery_table(names: list[str], model_dir: Path, data: dict, root: Path) -> list[str]:
    for name in names:
        result = run_case(CASES[name], model_dir, data, workdir(root, name))
        row = report.record(result)
        ok = "finished" if result.returncode == 0 and not result.proof.problems else f"FAILED rc={result.returncode}"
        print(f"{name}: {row} ({ok}; hit {result.victim})", flush=True)
    return report.table(report.ROWS)


def gathered(run_dir: Path, replica: str | None = None, after: float = 0.0) -> list[float]:
    """When the learner gathered each group (by `replica`) after `after`."""
    return [
        e["time"]
        for e in rows(run_dir / "groups.jsonl")
        if e["event"] == "trained" and e["time"] > after and replica in (None, e.get("replica"))
    ]


def started_after(proc: subprocess.Popen, replica: str, after: float) -> float | None:
    """Start time of the launcher's child `replica` begun after `after` (None: not yet)."""
    for child in psutil.Process(proc.pid).children():
        try:
            if f"--replica-id {replica}" in " ".join(child.cmdline()) and child.create_time() > after:
                return child.create_time()
        except psutil.Error:  # a child that just exited
            continue
    return None


def loaded_at(run_dir: Path, replica: str, after: float) -> float | None:
    times = [
        e["time"]
        for e in rows(run_dir / "groups.jsonl")
        if e["event"] == "weights_loaded" and e.get("replica") == replica and e["time"] > after
    ]
    return min(times, default=None)


def first(values: list[float]) -> float | None:
    return min(values, default=None)


class Timeline:
    """The moments of the throughput run, filled by `during` while the run goes on."""

    def __init__(self) -> None:
        self.fault = self.restarted = self.rejoined = self.scaled = None
        self.new_started = self.new_loaded = self.new_first = None

    def during(self, proc: subprocess.Popen, run_dir: Path, fault_time: float) -> None:
        """Measure, then stop the run (SIGTERM to the launcher: it stops every service)."""
        try:
            self.measure(proc, run_dir, fault_time)
        except AssertionError as err:  # a moment that never came: shown as "-"
            print(f"throughput run: {err}", flush=True)
        finally:
            proc.send_signal(signal.SIGTERM)

    def measure(self, proc: subprocess.Popen, run_dir: Path, fault_time: float) -> None:
        self.fault = fault_time
        wait_for(lambda: started_after(proc, "rollout-1", fault_time), proc, "rollout-1 to be restarted")
        self.restarted = started_after(proc, "rollout-1", fault_time)
        # After the new process started: a group the killed one made may be gathered after the kill
        wait_for(lambda: first(gathered(run_dir, "rollout-1", self.restarted)), proc, "rollout-1 to rejoin")
        self.rejoined = first(gathered(run_dir, "rollout-1", self.restarted))
        wait_for(lambda: len(gathered(run_dir, after=self.rejoined)) >= AFTER_GROUPS, proc, "steps after the rejoin")
        self.scaled = time.time()
        subprocess.run([sys.executable, "-m", "meshrl.cli.main", "scale", str(run_dir), "rollout=3"], check=True)
        wait_for(lambda: started_after(proc, "rollout-2", self.scaled), proc, "rollout-2 to start", 60)
        self.new_started = started_after(proc, "rollout-2", self.scaled)
        wait_for(lambda: first(gathered(run_dir, "rollout-2")), proc, "rollout-2's first group")
        self.new_first = first(gathered(run_dir, "rollout-2"))
        self.new_loaded = loaded_at(run_dir, "rollout-2", self.scaled)


def per_minute(times: list[float], start: float | None, end: float | None) -> str:
    """Groups gathered a minute in (start, end]; "-" when a moment never came."""
    if start is None or end is None:
        return "-"
    n = sum(start < t <= end for t in times)
    return f"{60.0 * n / (end - start):.1f} ({n} groups / {end - start:.0f} s)"


def throughput_table(model_dir: Path, data: dict, root: Path) -> list[str]:
    timeline = Timeline()
    fault = Fault("kill -9 rollout-1 (of 2)", "rollout-1", seed=1, step=FAULT_STEP)
    result = run_scenario(
        fault,
        model_dir,
        data,
        workdir(root, "throughput"),
        *THROUGHPUT_CONFIG,
        steps=THROUGHPUT_STEPS,
        during=timeline.during,
    )
    times = gathered(result.run_dir)
    t = timeline
    since = lambda a, b: "-" if a is None or b is None else f"{b - a:.1f}"  # noqa: E731
    return [
        f"run: {' '.join(THROUGHPUT_CONFIG)}; {len(result.metrics)} steps, then SIGTERM; "
        f"exit {result.returncode}; {result.proof.trained} of {result.proof.published} published groups trained",
        f"groups/min before the kill     : {per_minute(times, times[0], t.fault)}",
        f"groups/min rollout-1 down      : {per_minute(times, t.fault, t.rejoined)}",
        f"groups/min after it rejoined   : {per_minute(times, t.rejoined, t.scaled)}",
        f"rollout-1 restart: process start {since(t.fault, t.restarted)} s after the kill, "
        f"first group gathered {since(t.restarted, t.rejoined)} s after its start",
        f"rollout-2 (meshrl scale rollout=3): process start {since(t.scaled, t.new_started)} s after the "
        f"request; weights loaded {since(t.new_started, t.new_loaded)} s and first group gathered "
        f"{since(t.new_started, t.new_first)} s after its start",
    ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """--faults as a list of CASES names (an unknown one: an error listing the valid ones)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--faults", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}; '' for none")
    p.add_argument("--skip-throughput", action="store_true", help="only the recovery table")
    p.add_argument("--keep", type=Path, metavar="DIR", help="run in DIR (new) and keep every run dir and log there")
    args = p.parse_args(argv)
    args.faults = [n.strip() for n in args.faults.split(",") if n.strip()]
    unknown = [n for n in args.faults if n not in CASES]
    if unknown:
        p.error(f"unknown fault(s) {', '.join(unknown)}: choose from {', '.join(CASES)}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.faults
    print(
        f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs", flush=True
    )
    with tempfile.TemporaryDirectory(prefix="meshrl-recovery-") as tmp:
        root = Path(tmp) if args.keep is None else args.keep
        root.mkdir(parents=True, exist_ok=True)
        model_dir, data = prepare(root)
        lines = recovery_table(names, model_dir, data, root) if names else []
        lines += [""] + throughput_table(model_dir, data, root) if not args.skip_throughput else []
    print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
