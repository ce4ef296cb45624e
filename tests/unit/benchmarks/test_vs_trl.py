"""benchmarks/vs_trl.py's argument and result parsing, and stopping its child (the benchmark itself
is not a test)."""

import signal
import subprocess
import sys

import pytest

from benchmarks.vs_trl import (
    TRL_RUNNER,
    generated_tokens,
    generation_tokens_per_s,
    meshrl_split,
    pair_figures,
    pairs_report,
    parse_args,
    prompt_rows,
    stale_fraction,
    steady_median,
    stop_child,
)


def test_arguments_and_a_clear_error_for_too_few_steps(capsys):
    args = parse_args(["--steps", "3", "--skip-trl"])
    assert args.steps == 3 and args.skip_trl and args.max_staleness == 0
    with pytest.raises(SystemExit):
        parse_args(["--steps", "1"])
    assert "--steps=1: use at least 2" in capsys.readouterr().err
    assert args.runs == 3
    with pytest.raises(SystemExit):
        parse_args(["--runs", "0"])


def test_trl_runs_with_hf_generate_and_gradient_checkpointing_off_explicitly():
    assert "gradient_checkpointing=False, use_vllm=False" in TRL_RUNNER
    assert "assert not trainer.args.gradient_checkpointing" in TRL_RUNNER


def test_runs_report_each_sides_time_and_tokens_and_the_median_ratio_with_its_range():
    def mesh(step_s, length):
        return {"rows": [{"time/step": t, "completions/mean_length": length} for t in step_s]}

    pairs = [
        {
            "first": "trl",
            "trl": {"step_s": [50.0, 10.0, 10.0], "mean_length": [9.0, 20.0, 20.0]},
            "meshrl": mesh([40.0, 8.0, 8.0], 25.0),
        },
        {
            "first": "meshrl",
            "trl": {"step_s": [50.0, 12.0, 12.0], "mean_length": [9.0, 20.0, 22.0]},
            "meshrl": mesh([40.0, 6.0, 6.0], 25.0),
        },
        {
            "first": "trl",
            "trl": {"step_s": [50.0, 10.0, 10.0], "mean_length": [9.0, 20.0, 20.0]},
            "meshrl": mesh([40.0, 9.0, 9.0], 25.0),
        },
    ]
    figures = [pair_figures(p) for p in pairs]
    assert [f["ratio"] for f in figures] == pytest.approx([0.8, 0.5, 0.9])
    assert figures[1]["trl_tokens"] == pytest.approx(21.0 * 16) and figures[1]["meshrl_tokens"] == 25.0 * 16
    lines = pairs_report(figures)
    assert lines[1].startswith(
        "run 2 (meshrl first): TRL 12.00 s (336 generated tokens/step), "
        "meshrl 6.00 s (400 generated tokens/step) → ratio 0.50"
    )
    assert "ratio meshrl / TRL over 3 runs: median 0.80 (range 0.50–0.90)" in lines
    assert generated_tokens([None, None]) != generated_tokens([None, None])  # nan: TRL logged none


def test_prompts_are_sums_of_1_to_50():
    rows = prompt_rows(64)
    for row in rows:
        a, b = map(int, row["prompt"][0]["content"].removeprefix("What is ").removesuffix("?").split("+"))
        assert 1 <= a <= 50 and 1 <= b <= 50 and row["reward_model"]["ground_truth"] == str(a + b)
    assert rows == prompt_rows(64)  # seeded


def test_steady_figures_leave_out_the_first_step():
    assert steady_median([30.0, 4.0, 6.0, 5.0]) == 5.0
    rows = [
        {"time/step": 30.0, "time/train": 9.0, "completions/mean_length": 10.0, "time/generate_busy": 8.0},
        {"time/step": 6.0, "time/train": 3.0, "completions/mean_length": 20.0, "time/generate_busy": 2.0},
        {"time/step": 4.0, "time/train": 1.0, "completions/mean_length": 30.0, "time/generate_busy": 3.0},
    ]
    assert meshrl_split(rows) == {"time/generate_busy": 2.5, "time/step": 5.0, "time/train": 2.0}
    assert generation_tokens_per_s(rows) == pytest.approx((20 + 30) * 16 / 5.0)  # 16 samples a step


def test_stale_fraction_counts_the_ledger():
    ledger = [{"event": "published"}] * 5 + [
        {"event": "dropped", "reason": "stale"},
        {"event": "dropped", "reason": "no_signal"},
    ]
    assert stale_fraction(ledger) == (1, 5)


def test_on_cuda_meshrl_pushes_weights_over_the_collective_and_vllm_uses_cuda_graphs(tmp_path):
    from benchmarks.vs_trl import meshrl_config, where_vllm_ran
    from meshrl.config.load import load_config

    gpu = meshrl_config(tmp_path / "model", tmp_path / "d.jsonl", 4, 0, precision="bf16", device="cuda")
    cpu = meshrl_config(tmp_path / "model", tmp_path / "d.jsonl", 4, 0, precision="bf16", device="cpu")
    assert (gpu["learner"]["weights_transport"], gpu["rollout"]["enforce_eager"]) == ("collective", False)
    assert (cpu["learner"]["weights_transport"], cpu["rollout"]["enforce_eager"]) == ("shm", True)
    assert load_config(base=gpu).learner.weights_transport == "collective"  # valid against the schema
    assert parse_args(["--device", "cuda", "--model", "/m"]).model.as_posix() == "/m"
    assert where_vllm_ran("cuda") == "on the GPU" and where_vllm_ran("0,1") == "VLLM_CPU_OMP_THREADS_BIND=0,1"


def test_the_1p5b_gpu_config_loads():
    from pathlib import Path

    from meshrl.config.load import load_config

    path = Path(__file__).resolve().parents[3] / "benchmarks" / "configs" / "grpo_1p5b_gpu.yaml"
    cfg = load_config(path, ["model.path=/models/some-1.5b"])
    assert (cfg.learner.weights_transport, cfg.model.dtype, cfg.trainer.precision) == ("collective", "bfloat16", "bf16")
    assert cfg.rollout.enforce_eager is False and cfg.model.path == "/models/some-1.5b"


def test_a_stopped_benchmark_stops_its_meshrl_child():
    """stop_child: SIGTERM first (meshrl train stops its services on it), SIGKILL if it lingers."""
    polite = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop_child(polite)
    assert polite.returncode == -signal.SIGTERM
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    assert stubborn.stdout.readline() == b"ready\n"  # its handler is in place
    stop_child(stubborn, grace_s=0.5)
    assert stubborn.returncode == -signal.SIGKILL
    stop_child(stubborn)  # already ended: nothing to do
