"""SmolLM2-135M-Instruct learns to use the calculator tool through the whole mesh (issue 20).

Runs examples/agent_tool_smollm2.yaml with `meshrl train`'s launcher (embedded NATS, the
learner, the rollout on vLLM, the reward service, the built-in `tool_arith` environment as
its own replica) from nothing: fetches the model, writes the tool task's prompts (products of
two 3-digit numbers; training prompts with two or one worked examples of a call first, held-out
prompts with one), trains, then prints per step the
reward (the environment's: 1 for the right number), the share of logged episodes whose first
turn made a well-formed tool call, and the held-out accuracy (greedy episodes, 32 prompts)
before the first step and at each evaluation (`eval.every`).

    .venv/bin/python -m benchmarks.agent_tool [--run-dir runs/agent-tool-bench] [key=value ...]

Simplifications: one run, one seed; a 2-core host shared with other work (the load average is
printed with the figures); the training samples are read from samples.jsonl (its
`eval.samples_per_step` rows per step, not every episode).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import write_problems
from meshrl.inputs.models.fetch import fetch_smollm2
from meshrl.launch.local import run_local

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "agent_tool_smollm2.yaml"


def write_data(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    train, held_out = root / "tool_train.jsonl", root / "tool_eval.jsonl"
    halves = [root / "tool_train2.jsonl", root / "tool_train1.jsonl"]
    write_problems(halves[0], n=256, digits=3, ops="*", seed=0, tool=True, tool_shots=2)
    write_problems(halves[1], n=256, digits=3, ops="*", seed=2, tool=True, tool_shots=1)
    train.write_text("".join(half.read_text() for half in halves))  # the example's `cat`
    write_problems(held_out, n=32, digits=3, ops="*", seed=1, tool=True, tool_shots=1)
    return {"data.train": str(train), "data.eval": str(held_out)}


def called_well(sample: dict) -> bool:
    turns = sample.get("turns") or []
    return bool(turns and turns[0]["tool_calls"] and not any(c["error"] for c in turns[0]["tool_calls"]))


def report(run_dir: Path, seconds: float) -> None:
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    samples = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    print(f"{len(metrics)} steps in {seconds:.0f} s (load average {os.getloadavg()[0]:.1f})")
    for m in metrics:
        train = [s for s in samples if s["split"] == "train" and s["step"] == m["step"]]
        well = sum(map(called_well, train))
        held_out = f"  held-out accuracy {m['eval/accuracy']:.3f}" if "eval/accuracy" in m else ""
        print(
            f"step {m['step']:>2}  reward {m['reward']:.3f}  step {m['time/step']:.0f} s  "
            f"well-formed first-turn calls in logged samples {well}/{len(train)}{held_out}"
        )
    first, last = metrics[0], metrics[-1]
    print(
        f"held-out accuracy: before {first.get('eval_start/accuracy')}  after {last.get('eval/accuracy')} "
        f"(n={last.get('eval/n')})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", default="runs/agent-tool-bench")
    parser.add_argument("overrides", nargs="*", help="key=value overrides of the example config")
    args = parser.parse_args()
    run_dir = Path(args.run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)
    data = write_data(run_dir.parent / "agent-tool-data")
    model = fetch_smollm2()
    overrides = [
        f"model.path={model}",
        f"run.dir={run_dir}",
        *(f"{k}={v}" for k, v in data.items()),
        "eval.samples_per_step=8",
        *args.overrides,
    ]
    cfg = load_config(EXAMPLE, overrides=overrides)
    began = time.perf_counter()
    run_local(cfg, run_dir, progress=True)
    report(run_dir, time.perf_counter() - began)


if __name__ == "__main__":
    main()
