"""benchmarks/time_to_accuracy.py's clock and curves, against hand-computed values (the benchmark
itself runs for an hour and is not a test)."""

import argparse
from pathlib import Path

import pytest

from benchmarks.time_to_accuracy import (
    accuracy_at,
    equal_time_lines,
    first_reach,
    meshrl_curve,
    meshrl_overrides,
    parse_args,
    rotation,
    trl_split,
)
from meshrl.config import load_config

REPO = Path(__file__).resolve().parents[3]


def test_meshrl_curve_takes_every_evaluation_out_of_the_clock():
    launched = 1000.0
    rows = [
        # start-up ended at 1060; the at-start eval took 5 s, step 1 took 20 s, its eval 4 s
        {"step": 0, "time": 1089.0, "time/step": 20.0, "eval_start/accuracy": 0.5, "eval_start/time_s": 5.0,
         "eval/accuracy": 0.7, "eval/time_s": 4.0},
        {"step": 1, "time": 1114.0, "time/step": 21.0, "eval/accuracy": 0.95, "eval/time_s": 4.0},
    ]  # fmt: skip
    curve = meshrl_curve(rows, launched)
    assert [p["step"] for p in curve] == [0, 1, 2]
    assert curve[0]["t"] == pytest.approx(1089 - 1000 - 9 - 20)  # where step 1 began: 60
    assert curve[1]["t"] == pytest.approx(80.0)
    assert curve[2]["t"] == pytest.approx(1114 - 1000 - 13)  # 101
    assert first_reach(curve, 0.9) == pytest.approx(101.0)
    assert first_reach(curve, 0.99) is None
    assert accuracy_at(curve, 90.0) == 0.7 and accuracy_at(curve, 59.0) is None


def test_trl_steps_are_paired_into_generation_batches_and_the_first_is_dropped():
    # optimizer steps: batch 1 (warm-up) 30+10, batch 2 12+5, batch 3 14+5
    split = trl_split([30.0, 10.0, 12.0, 5.0, 14.0, 5.0])
    assert split["time/step"] == pytest.approx(18.0)
    assert split["time/generate (≈)"] == pytest.approx(8.0)  # (7 + 9) / 2
    assert split["time/train (≈)"] == pytest.approx(10.0)


def test_each_side_goes_first_once_per_round_of_seeds():
    sides = ["trl", "sync", "overlap"]
    assert [rotation(sides, i)[0] for i in range(3)] == ["trl", "sync", "overlap"]


def test_accuracy_at_the_fastest_sides_median_time():
    runs = [
        {"side": "trl", "curve": [{"t": 100.0, "accuracy": 0.6}, {"t": 300.0, "accuracy": 0.9}]},
        {"side": "sync", "curve": [{"t": 50.0, "accuracy": 0.6}, {"t": 150.0, "accuracy": 0.92}]},
    ]
    lines = equal_time_lines(runs, ["trl", "sync"], {"trl": 300.0, "sync": 150.0})
    assert "at 150 s (when sync reached" in lines[0]
    assert lines[1].split() == ["trl", "0.600"] and lines[2].split() == ["sync", "0.920"]


@pytest.mark.parametrize("side", ["sync", "overlap"])
def test_the_overrides_load_on_the_main_jobs_config(side, tmp_path):
    args = argparse.Namespace(steps=12, overlap_cores="split")
    data = (tmp_path / "train.jsonl", tmp_path / "eval.jsonl")
    overrides = meshrl_overrides(side, args, tmp_path / "model", data, 2, tmp_path / "run")
    cfg = load_config(REPO / "examples" / "grpo_smollm2.yaml", overrides)
    assert cfg.learner.max_staleness == (1 if side == "overlap" else 0)
    assert cfg.launch.cores == ("split" if side == "overlap" else "auto")
    assert (cfg.eval.every, cfg.eval.at_start, cfg.eval.max_prompts, cfg.eval.exclusive) == (1, True, 64, True)
    assert cfg.trainer.optim.warmup_steps == 0 and cfg.run.seed == 2 and cfg.learner.checkpoint_every == 0


def test_unknown_sides_are_named(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--sides", "trl,async"])
    assert "unknown async" in capsys.readouterr().err
