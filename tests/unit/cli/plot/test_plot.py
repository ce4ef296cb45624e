"""plot_run / meshrl plot: synthetic metrics.jsonl -> a real PNG; clear errors otherwise."""

import argparse
import json
import math
import struct

import numpy as np
import pytest

from meshrl.cli.plot.cli import add_subcommand
from meshrl.cli.plot.figure import _stack_component, plot_run
from meshrl.cli.plot.series import PlotError, load_series

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def synthetic_row(step: int) -> dict:
    return {
        "step": step,
        "time": 1000.0 + 5 * step,
        "reward": 0.2 + 0.6 * step / 40,
        "reward_std": 0.3 - 0.004 * step,
        "kl": None if step == 7 else 0.002 * step,
        "entropy": 1.2 * math.exp(-step / 30),
        "loss": 0.1 * math.sin(step),
        "pg_loss": 0.05 * math.cos(step),
        "grad_norm": 1 + step % 5,
        "lr": 1e-6,
        "clip_ratio/low": 0.01,
        "clip_ratio/high": 0.02,
        "completions/mean_length": 30 + step,
        "completions/max_length": 64,
        "completions/clipped_ratio": 0.1,
        "perf/throughput": 90.0 + step,
        "time/step": 5.0,
        "time/generate": 2.0,
        "time/reward": 0.3,
        "time/reference": 0.4,
        "time/forward": 0.8,
        "time/backward": 1.0,
        "time/optimizer": 0.2,
        "time/wait_for_batch": 0.3,
        "weights_version": step,
        "staleness/mean": 0.5,
        "groups/dropped_stale": 0,
        "algo": "grpo",
    }


def write_run(tmp_path, rows, tail: str = ""):
    run = tmp_path / "run-1"
    run.mkdir()
    text = "".join(json.dumps(r) + "\n" for r in rows)
    (run / "metrics.jsonl").write_text(text + tail)
    return run


def test_synthetic_run_gives_a_png_of_sensible_size(tmp_path):
    run = write_run(tmp_path, [synthetic_row(s) for s in range(1, 41)])
    out = plot_run(run)
    assert out == run / "metrics.png"
    width, height = png_size(out)
    # 12 panels in a 3-column grid at 100 dpi: 13.2 in x 11.6 in
    assert (width, height) == (1320, 1160)
    assert out.stat().st_size > 50_000  # curves were drawn, not an empty canvas


def test_missing_metrics_drop_their_panels(tmp_path):
    rows = [{"step": s, "reward": 0.5, "kl": 0.01} for s in range(5)]
    out = plot_run(write_run(tmp_path, rows), tmp_path / "sub" / "small.png")
    assert png_size(out) == (1320, 290)  # one row of panels: reward, KL


def test_series_gaps_nulls_dedupes_steps_and_skips_a_partial_last_line(tmp_path):
    rows = [
        {"step": 1, "kl": 0.1, "algo": "x"},
        {"step": 2, "kl": None},
        {"step": 3, "kl": 0.3},
        {"step": 2, "kl": 0.25},
    ]  # step 2 written again on resume
    steps, series = load_series(write_run(tmp_path, rows, tail='{"step": 4, "kl'))
    assert steps.tolist() == [1.0, 2.0, 3.0]
    assert series["kl"].tolist() == [0.1, 0.25, 0.3]
    assert "algo" not in series
    (tmp_path / "b").mkdir()
    _, series = load_series(write_run(tmp_path / "b", rows[:3]))
    assert math.isnan(series["kl"][1])  # null stays a gap


def test_stacked_component_sums_present_keys_and_gaps_empty_steps():
    series = {"time/forward": np.array([1.0, np.nan, np.nan]), "time/backward": np.array([2.0, 0.5, np.nan])}
    part = _stack_component(("time/forward", "time/backward", "time/optimizer"), series, 3)
    assert part[:2].tolist() == [3.0, 0.5] and math.isnan(part[2])


def test_errors_name_the_problem(tmp_path):
    with pytest.raises(PlotError, match="does not exist"):
        plot_run(tmp_path / "nope")
    with pytest.raises(PlotError, match="has no metrics.jsonl"):
        plot_run(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "metrics.jsonl").write_text("\n")
    with pytest.raises(PlotError, match="no steps yet"):
        plot_run(empty)
    bad = write_run(tmp_path, [{"step": 1}], tail="oops\n{}\n")
    with pytest.raises(PlotError, match=r"metrics.jsonl:2 is not JSON"):
        plot_run(bad)
    other = tmp_path / "other"
    other.mkdir()
    (other / "metrics.jsonl").write_text('{"step": 1, "foo": 2}\n')
    with pytest.raises(PlotError, match="none of the plotted metrics"):
        plot_run(other)


def test_cli_plot_writes_and_reports_errors(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_subcommand(parser.add_subparsers(dest="command"))
    run = write_run(tmp_path, [{"step": s, "reward": 0.1 * s} for s in range(3)])
    args = parser.parse_args(["plot", str(run), "--out", str(tmp_path / "p.png")])
    assert args.func(args) == 0
    assert png_size(tmp_path / "p.png")[0] == 1320
    assert f"wrote {tmp_path / 'p.png'}" in capsys.readouterr().out
    args = parser.parse_args(["plot", str(tmp_path / "missing")])
    assert args.func(args) == 2
    assert "does not exist" in capsys.readouterr().err
