"""benchmarks/image_steps.py's figures: steps per minute from metrics.jsonl and the report (the
benchmark itself, podman and a whole mesh twice, is not a test)."""

import json

from benchmarks.image_steps import report, steps_per_minute


def test_steps_per_minute_leaves_the_first_step_out(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text(
        "".join(json.dumps({"step": n, "time": t}) + "\n" for n, t in enumerate([400.0, 403.0, 406.0, 409.0]))
    )
    count, rate = steps_per_minute(metrics)
    assert count == 4
    assert abs(rate - 20.0) < 1e-9  # 3 steps in 9 s after the first finished (start-up is in the first)


def test_report_gives_each_sides_median_and_the_ratio(capsys):
    runs = [{"side": "venv", "rate": r} for r in (10.0, 20.0, 12.0)] + [
        {"side": "image", "rate": r} for r in (9.0, 11.0, 30.0)
    ]
    report(runs)
    out = capsys.readouterr().out
    assert "venv   median 12.00 steps/min over 3 runs (range 10.00-20.00)" in out
    assert "image  median 11.00" in out and "image / venv = 0.92" in out
