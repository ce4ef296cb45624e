"""Where a step's time went, from metrics.jsonl rows: the means a user reads at the end of a
run (the progress bar's summary), by hand; and the learner's `time/idle`."""

import json

from meshrl.launch.progress import RunProgress, time_split
from meshrl.services.learner.step_metrics import with_derived

ROWS = [
    {"step": 0, "time/step": 20.0, "time/generate_busy": 6.0, "time/wait_for_batch": 7.0, "time/reward_busy": 0.5,
     "time/train": 5.0, "time/forward": 1.0, "time/backward": 3.0, "time/optimizer": 0.5, "time/weights_push": 0.8,
     "time/idle": 2.0},
    {"step": 1, "time/step": 24.0, "time/generate_busy": 8.0, "time/wait_for_batch": 9.0, "time/reward_busy": 0.7,
     "time/train": 6.0, "time/forward": 1.4, "time/backward": 3.8, "time/optimizer": 0.5, "time/weights_push": 1.0,
     "time/idle": 3.0},
]  # fmt: skip


def test_the_split_is_each_parts_mean_in_the_order_a_step_runs_them():
    assert time_split(ROWS) == (
        "a step 22.0 s on average: generate 7.0 s, wait 8.0 s, score 0.6 s, train 5.5 s "
        "(forward 1.2 s, backward 3.4 s, optimizer 0.5 s), push 0.9 s, idle 2.5 s"
    )


def test_no_step_no_split():
    assert time_split([]) == "" and time_split([{"step": 0, "reward": 1.0}]) == ""


def test_idle_is_the_step_less_training_and_the_services_busy_time():
    metrics = with_derived({"time/step": 10.0, "time/train": 4.0, "time/services_busy": 5.0})
    assert metrics["time/idle"] == 1.0


def test_the_bar_keeps_every_row_it_read(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("")
    bar = RunProgress(path, total_steps=2, enabled=False)
    with path.open("a") as f:
        f.writelines(json.dumps(row) + "\n" for row in ROWS)
    bar.update()
    assert bar.rows == ROWS and time_split(bar.rows).startswith("a step 22.0 s")
