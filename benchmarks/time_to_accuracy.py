"""Time to accuracy: how soon TRL and meshrl each make SmolLM2-135M-Instruct good at the main job's task.

    .venv/bin/python -m benchmarks.time_to_accuracy --seeds 0,1,2            # TRL, meshrl sync, meshrl overlapped
    .venv/bin/python -m benchmarks.time_to_accuracy --seeds 0 --sides sync,overlap --steps 8

The task and recipe are the main job's (examples/grpo_smollm2.yaml): sums of one-digit numbers
(`meshrl data arithmetic --digits 1`, train seed 0, eval seed 1), GRPO, 8 prompts × 8 samples per
step, ≤ 16 new tokens at T = 1, two optimizer steps per batch of micro-batches of 16, β = 0,
lr 2e-5 on a cosine to 0.1 of it over the run, no warm-up, fp32 (this CPU's fastest precision),
math-verify as the reward on both sides. Held out: the same first 64 eval prompts, greedy, ≤ 16
tokens, judged by math-verify, before training and after every step; each evaluation's own time
is taken out of the clock on both sides.

Sides, run one after another in a rotating order per seed (so the machine's drift falls on all):
- `trl`: TRL 1.16's GRPOTrainer with HF generate, in its own venv (benchmarks/vs_trl.py builds it;
  math-verify is added), benchmarks/trl_grpo_eval_runner.py;
- `sync`: `meshrl train`, on-policy (`learner.max_staleness=0`), every process on every core;
- `overlap`: `meshrl train` with `learner.max_staleness=1` (the rollout generates step N+1 while the
  learner trains step N; the off-policy correction: old log-probs recomputed, clipped ratio) and
  `launch.cores=--overlap-cores`.

Printed and written to WORK/time_to_accuracy.json: per run the wall time from launch until held-out
accuracy first reaches the target (start-up included, evaluation excluded), the start-up, the
held-out curve; per side the median and range; the accuracy each side had at the time the fastest
side reached the target; per side the mean step split; the load average before and after each run.

meshrl's evaluation runs through its own rollout with `eval.exclusive` on: no training prompt goes
out while it runs (as TRL's evaluation in its callback stops everything), so its time can be taken
out of the clock without handing meshrl a batch generated for free. Simplification: groups already
in flight when an evaluation starts (the overlapped side's next batch) still finish during it.
TRL's reward and evaluation use the same math-verify judge (services/reward/verify_worker.py) in
its venv.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.vs_trl import ensure_model, ensure_trl_venv, meshrl_split, read_rows, stale_fraction, stop_child
from meshrl.launch.supervisor import stop_on_signals

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RECIPE = {"prompts": 8, "samples": 8, "micro": 16, "mini_batches": 2, "max_tokens": 16, "lr": 2e-5}
MIN_LR_RATIO, EVAL_PROMPTS = 0.1, 64
SIDES = ("trl", "sync", "overlap")
MATH_VERIFY_PIN = "math-verify==0.9.0"


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2", help="comma-separated run seeds; each seed runs every side")
    ap.add_argument("--sides", default=",".join(SIDES), help=f"which of {', '.join(SIDES)}")
    ap.add_argument("--steps", type=int, default=12, help="steps per run (the schedule's length)")
    ap.add_argument("--target", type=float, default=0.90, help="held-out accuracy to reach")
    ap.add_argument(
        "--overlap-cores", default="split", choices=("split", "shared"), help="launch.cores when overlapped"
    )
    ap.add_argument("--work", type=Path, default=Path("/tmp/meshrl-time-to-accuracy"))
    ap.add_argument("--cache", type=Path, default=Path("~/.cache/meshrl-bench").expanduser())
    args = ap.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if unknown := sorted(set(args.sides) - set(SIDES)):
        ap.error(f"--sides: unknown {', '.join(unknown)}; choose from {', '.join(SIDES)}")
    if args.steps < 1 or not 0.0 < args.target <= 1.0:
        ap.error("--steps must be ≥ 1 and --target in (0, 1]")
    return args


def make_data(work: Path) -> tuple[Path, Path]:
    """The main job's files: 2,000 training sums (seed 0) and 200 held-out ones (seed 1)."""
    meshrl = Path(sys.executable).with_name("meshrl")
    train, held_out = work / "arith_train.jsonl", work / "arith_eval.jsonl"
    for out, n, seed in ((train, 2000, 0), (held_out, 200, 1)):
        if not out.is_file():
            cmd = ["data", "arithmetic", "--out", str(out), "--n", str(n), "--digits", "1", "--seed", str(seed)]
            subprocess.run([str(meshrl), *cmd], check=True, capture_output=True)
    return train, held_out


def rotation(sides: list[str], seed_index: int) -> list[str]:
    """The order of the sides for the i-th seed: each side goes first once every len(sides) seeds."""
    shift = seed_index % len(sides)
    return sides[shift:] + sides[:shift]


def first_reach(curve: list[dict], target: float) -> float | None:
    """The effective time of the first evaluation at or above `target`; None if none was."""
    return next((p["t"] for p in curve if p["accuracy"] >= target), None)


def accuracy_at(curve: list[dict], t: float) -> float | None:
    """The held-out accuracy a run had at effective time `t` (its last evaluation by then)."""
    done = [p["accuracy"] for p in curve if p["t"] <= t]
    return done[-1] if done else None


def meshrl_curve(rows: list[dict], launched_at: float) -> list[dict]:
    """Held-out points from metrics.jsonl: before training (eval_start/*, placed where the first
    step began) and after each step, at the row's wall time since launch minus every
    evaluation's own time up to it."""
    curve, evals = [], 0.0
    for row in rows:
        evals += row.get("eval_start/time_s", 0.0) + row.get("eval/time_s", 0.0)
        t = row["time"] - launched_at - evals
        if "eval_start/accuracy" in row:
            curve.append({"step": 0, "t": t - row.get("time/step", 0.0), "accuracy": row["eval_start/accuracy"]})
        if "eval/accuracy" in row:
            curve.append({"step": row["step"] + 1, "t": t, "accuracy": row["eval/accuracy"]})
    return curve


def ensure_judge_in(python: Path) -> None:
    """math-verify in the TRL venv, at meshrl's pin, so both sides judge alike."""
    if subprocess.run([str(python), "-c", "import math_verify"], capture_output=True).returncode != 0:
        subprocess.run([str(python), "-m", "pip", "install", "-q", MATH_VERIFY_PIN], check=True)


def run_trl(python: Path, model: Path, data: tuple[Path, Path], seed: int, steps: int, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    spec_file, result = work / "spec.json", work / "result.json"
    spec = {**RECIPE, "model": str(model), "train": str(data[0]), "eval": str(data[1]), "steps": steps}
    spec |= {"seed": seed, "min_lr_ratio": MIN_LR_RATIO, "eval_prompts": EVAL_PROMPTS, "out": str(work / "out")}
    spec |= {"judge": str(REPO / "services" / "reward" / "verify_worker.py"), "result": str(result)}
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1), "TOKENIZERS_PARALLELISM": "false"}
    spec["launched_at"] = time.time()
    spec_file.write_text(json.dumps(spec))
    with open(work / "trl.log", "w") as log:
        runner = [str(python), str(HERE / "trl_grpo_eval_runner.py"), str(spec_file)]
        subprocess.run(runner, check=True, env=env, stdout=log, stderr=subprocess.STDOUT)
    answer = json.loads(result.read_text())
    return {"curve": answer["evals"], "split": trl_split(answer["step_s"]), "reward": answer["reward"]}


def trl_split(step_s: list[float]) -> dict[str, float]:
    """A meshrl-sized step of TRL (mini_batches optimizer steps, the first of which generates):
    its mean seconds, and generation ≈ the first optimizer step minus a later one."""
    mini = RECIPE["mini_batches"]
    batches = [step_s[i : i + mini] for i in range(0, len(step_s) - mini + 1, mini)][1:]  # the first warms up
    if not batches:
        return {}
    step = statistics.mean(sum(b) for b in batches)
    generate = statistics.mean(b[0] - statistics.mean(b[1:]) for b in batches)
    return {"time/step": step, "time/generate (≈)": generate, "time/train (≈)": step - generate}


def meshrl_overrides(side: str, args, model: Path, data: tuple[Path, Path], seed: int, run_dir: Path) -> list[str]:
    """The main job's config with this benchmark's data, length, evaluation and side."""
    overlapped = side == "overlap"
    return [
        f"model.path={model}", f"data.train={data[0]}", f"data.eval={data[1]}", f"run.dir={run_dir}",
        f"run.seed={seed}", f"learner.steps={args.steps}", "learner.checkpoint_every=0",
        f"learner.max_staleness={1 if overlapped else 0}",
        f"launch.cores={args.overlap_cores if overlapped else 'auto'}",
        "trainer.optim.warmup_steps=0", f"trainer.optim.min_lr_ratio={MIN_LR_RATIO}",
        "eval.every=1", "eval.at_start=true", f"eval.max_prompts={EVAL_PROMPTS}", "eval.exclusive=true",
    ]  # fmt: skip


def run_meshrl(side: str, args, model: Path, data: tuple[Path, Path], seed: int, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    run_dir = work / "run"
    meshrl = Path(sys.executable).with_name("meshrl")
    command = [str(meshrl), "train", str(REPO / "examples" / "grpo_smollm2.yaml")]
    command += meshrl_overrides(side, args, model, data, seed, run_dir)
    launched_at = time.time()
    with open(work / "meshrl.log", "w") as log:
        child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=work)
        try:
            child.wait()
        finally:  # interrupted: the run stops too, its services with it
            stop_child(child)
    if child.returncode != 0:
        sys.exit(f"meshrl train failed (exit {child.returncode}); see {work / 'meshrl.log'} and {run_dir}/logs")
    rows = read_rows(run_dir / "metrics.jsonl")
    return {"curve": meshrl_curve(rows, launched_at), "split": meshrl_split(rows), "stale": stale_drops(run_dir)}


def stale_drops(run_dir: Path) -> str:
    stale, published = stale_fraction(read_rows(run_dir / "groups.jsonl"))
    return f"{stale} of {published} groups dropped as stale"


def run_one(side: str, args, model: Path, data, seed: int, trl_python: Path | None) -> dict:
    """One run of one side, with the load average around it and its time to the target."""
    work = args.work / f"seed{seed}-{side}"
    load_before = os.getloadavg()[0]
    if side == "trl":
        out = run_trl(trl_python, model, data, seed, args.steps, work)
    else:
        out = run_meshrl(side, args, model, data, seed, work)
    out |= {"side": side, "seed": seed, "load": (load_before, os.getloadavg()[0])}
    out["reached_s"] = first_reach(out["curve"], args.target)
    print(f"{side:8} seed {seed}: {describe(out, args.target)}", flush=True)
    return out


def describe(run: dict, target: float) -> str:
    reached = run["reached_s"]
    when = f"{target:.2f} at {reached:.0f} s" if reached is not None else f"{target:.2f} not reached"
    points = " ".join(f"{p['accuracy']:.2f}" for p in run["curve"])
    return f"{when}; held-out per step: {points}; load {run['load'][0]:.1f} → {run['load'][1]:.1f}"


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} s ({min(values):.0f}–{max(values):.0f})" if values else "—"


def report(runs: list[dict], args) -> str:
    sides = [s for s in args.sides if any(r["side"] == s for r in runs)]
    lines = [f"time from launch to held-out accuracy ≥ {args.target:.2f} (evaluation excluded), median (range):"]
    medians = {}
    for side in sides:
        times = [r["reached_s"] for r in runs if r["side"] == side and r["reached_s"] is not None]
        total = sum(1 for r in runs if r["side"] == side)
        medians[side] = statistics.median(times) if times else None
        lines.append(f"  {side:8} {spread(times)}, reached in {len(times)} of {total} runs")
    lines += equal_time_lines(runs, sides, medians)
    for side in sides:
        split = next(r["split"] for r in runs if r["side"] == side)
        lines.append(
            f"{side} step split (first seed, mean of steps 2..): " + ", ".join(f"{k} {v:.1f}" for k, v in split.items())
        )
    lines += [f"{r['side']} seed {r['seed']}: {r['stale']}" for r in runs if "stale" in r]
    return "\n".join(lines)


def equal_time_lines(runs: list[dict], sides: list[str], medians: dict) -> list[str]:
    """Each side's held-out accuracy at the moment the fastest side (by median) reached the target."""
    reached = {s: m for s, m in medians.items() if m is not None}
    if not reached:
        return []
    fastest = min(reached, key=reached.get)
    t = reached[fastest]
    lines = [f"held-out accuracy at {t:.0f} s (when {fastest} reached the target, its median), mean over seeds:"]
    for side in sides:
        values = [a for r in runs if r["side"] == side and (a := accuracy_at(r["curve"], t)) is not None]
        lines.append(f"  {side:8} {statistics.mean(values):.3f}" if values else f"  {side:8} (no evaluation yet)")
    return lines


def main(argv=None) -> None:
    args = parse_args(argv)
    with stop_on_signals():
        run(args)


def run(args) -> None:
    args.work.mkdir(parents=True, exist_ok=True)
    model, data = ensure_model(), make_data(args.work)
    trl_python = ensure_trl_venv(args.cache) if "trl" in args.sides else None
    if trl_python is not None:
        ensure_judge_in(trl_python)
    runs = []
    for i, seed in enumerate(args.seeds):
        for side in rotation(args.sides, i):
            runs.append(run_one(side, args, model, data, seed, trl_python))
            (args.work / "time_to_accuracy.json").write_text(json.dumps(runs, indent=1))
    print(report(runs, args))


if __name__ == "__main__":
    main()
