"""What an environment outage costs: kill -9 of the run's only environment replica mid-episode,
restarted by the launcher after its back-off (10 s here), on a real `meshrl train` (learner,
rollout with vLLM, reward, the built-in tool_arith environment; embedded NATS) on the tiny model.

Read from the learner's ledger (groups.jsonl), within the outage: from the kill to the first
group whose episodes ran again (trained or kept after the kill):
- prompts consumed: draws taken from the dataset for the first time (a draw number above every
  one published before the kill): an outage should cost its duration, not the dataset;
- groups in flight at the kill: published before it, not yet trained or dropped;
- groups dropped env_unavailable / env_deadline_exceeded, and groups published (probes and
  given-back draws);
- wall seconds of the outage, and steps the run trained.

Simplifications: one run, on whatever the machine is doing (the load average is printed); the
random tiny model never calls the tool, so an episode is Reset, one turn, Step, Close.

    .venv/bin/python -m benchmarks.env_outage
    .venv/bin/python -m benchmarks.env_outage --backoff-s 10 --steps 14
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from benchmarks.recovery import prepare, workdir
from meshrl.inputs.models.tiny import build_tiny_model_dir
from tests.chaos.faults import TWO_ENVIRONMENTS, Case, holds_an_episode, run_case
from tests.chaos.scenario import Fault

OUTAGE_CODES = ("env_unavailable", "env_deadline_exceeded")


def outage_case(backoff_s: float, steps: int) -> Case:
    one_replica = tuple(o for o in TWO_ENVIRONMENTS if not o.startswith("environment.replicas="))
    overrides = (
        *one_replica,
        "environment.replicas=1",
        f"launch.backoff_initial_s={backoff_s}",
        f"learner.steps={steps}",
    )
    fault = Fault("kill -9 environment-0 (the only one) mid-episode", "environment-0", seed=8, when=holds_an_episode)
    return Case(fault, overrides)


def outage_figures(ledger: list[dict], fault_time: float) -> dict:
    """The figures of the module docstring from the ledger's rows and the kill's time."""
    draws = {e["group_id"]: e.get("draw") for e in ledger if e["event"] == "published"}
    before = [e for e in ledger if e["time"] < fault_time]
    settled = {e["group_id"] for e in before if e["event"] in ("trained", "dropped")}
    in_flight = [g for g in (e["group_id"] for e in before if e["event"] == "published") if g not in settled]
    ran_again = [e["time"] for e in ledger if e["time"] > fault_time and e["event"] == "trained"]
    end = min(ran_again, default=ledger[-1]["time"])
    during = [e for e in ledger if fault_time <= e["time"] <= end]
    seen_before = max((draws[e["group_id"]] for e in before if e["event"] == "published"), default=-1)
    published = [e for e in during if e["event"] == "published"]
    return {
        "outage_s": end - fault_time,
        "in_flight_at_kill": len(in_flight),
        "published_during": len(published),
        "prompts_consumed": len([e for e in published if draws[e["group_id"]] > seen_before]),
        "dropped_for_outage": len([e for e in during if e["event"] == "dropped" and e["reason"] in OUTAGE_CODES]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backoff-s", type=float, default=10.0, help="the launcher's wait before the restart")
    parser.add_argument("--steps", type=int, default=14)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="meshrl-env-outage-") as tmp:
        root = Path(tmp)
        _, data = prepare(root)
        model_dir = build_tiny_model_dir(root / "tiny_long", max_positions=2048)
        result = run_case(outage_case(args.backoff_s, args.steps), model_dir, data, workdir(root, "outage"))
        figures = outage_figures(result.ledger, result.fault_time)
        trained_steps = len({e["step"] for e in result.ledger if e["event"] == "trained"})
    print(f"load average {os.getloadavg()[0]:.1f}; run rc={result.returncode}, {trained_steps} steps trained")
    for name, value in figures.items():
        print(f"{name}: {value:.1f}" if isinstance(value, float) else f"{name}: {value}")


if __name__ == "__main__":
    main()
