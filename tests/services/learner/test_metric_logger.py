"""The learner's step metrics reach /metrics: `with_prometheus` fans each step out to
metrics.jsonl and to gauges `meshrl_train_<key>` on a real endpoint scraped over HTTP."""

import json
import math

import pytest
import torch

from meshrl.services.learner.metric_logger import JsonlLogger, MultiLogger, with_prometheus
from meshrl.telemetry.metrics import start_metrics
from tests.fixtures.prometheus import promtool_check, sample, scrape


@pytest.fixture
def handle():
    h = start_metrics("learner", replica="learner-0", run_id="run-l")
    yield h
    h.close()


def test_each_step_becomes_gauges_and_a_jsonl_row(handle, tmp_path):
    logger = with_prometheus(JsonlLogger(tmp_path / "metrics.jsonl"), handle)
    assert isinstance(logger, MultiLogger)
    logger.log(0, {"reward": 0.25, "clip_ratio/low": 0.01, "loss": torch.tensor(1.5)})
    logger.log(1, {"reward": 0.75, "clip_ratio/low": math.nan, "loss": torch.tensor(0.5)})
    logger.close()
    text = scrape(handle.url)  # the endpoint outlives the logger: serve() owns it
    ids = dict(service="learner", replica="learner-0", run="run-l")
    assert sample(text, "meshrl_train_step", **ids) == 1
    assert sample(text, "meshrl_train_reward", **ids) == 0.75
    assert sample(text, "meshrl_train_loss", **ids) == 0.5  # a 0-d tensor is a number
    assert sample(text, "meshrl_train_clip_ratio_low", **ids) == 0.01  # NaN keeps the last value
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["reward"] for r in rows] == [0.25, 0.75]


# Every key a GRPO step writes to metrics.jsonl (a real run's first row), as the learner logs it.
STEP_KEYS = [
    "advantages/mean",
    "approx_kl",
    "clip_ratio/dual",
    "clip_ratio/high",
    "clip_ratio/low",
    "completions/clipped_ratio",
    "completions/max_length",
    "completions/mean_length",
    "entropy",
    "frac_reward_zero_std",
    "grad_norm",
    "groups/dropped_failed_reward",
    "groups/trained_total",
    "loss",
    "lr",
    "memory/rss_bytes",
    "mesh/overhead_share",
    "mismatch_kl",
    "perf/throughput",
    "perf/tokens",
    "pg_loss",
    "queue/generated",
    "queue/ready",
    "ratio/max",
    "reward",
    "reward/max",
    "reward_std",
    "rollout_correction/weight/mean",
    "staleness/mean",
    "time/algo",
    "time/backward",
    "time/forward",
    "time/step",
    "time/wait_for_batch",
    "time/weights_push",
    "weights/bytes",
    "weights_version",
]


def test_a_full_step_passes_promtool(handle, tmp_path):
    logger = with_prometheus(JsonlLogger(tmp_path / "metrics.jsonl"), handle)
    logger.log(3, {key: 0.5 for key in STEP_KEYS})
    logger.close()
    text = scrape(handle.url)
    assert sample(text, "meshrl_train_step_phase_seconds", phase="forward", service="learner") == 0.5
    assert sample(text, "meshrl_train_groups_trained", service="learner") == 0.5
    promtool_check(text)


def test_metrics_off_leaves_the_logger_alone(tmp_path):
    jsonl = JsonlLogger(tmp_path / "metrics.jsonl")
    assert with_prometheus(jsonl, None) is jsonl
    jsonl.close()


def test_tensorboard_logger_writes_scalars_tensorboard_reads_back(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from meshrl.services.learner.metric_logger import TensorBoardLogger

    logger = TensorBoardLogger(tmp_path / "tb")
    logger.log(0, {"reward": 0.25, "loss": torch.tensor(1.5), "note": "text is skipped"})
    logger.log(1, {"reward": 0.75, "loss": math.nan})  # NaN: not written
    logger.close()
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["loss", "reward"]
    assert [(e.step, e.value) for e in events.Scalars("reward")] == [(0, 0.25), (1, 0.75)]
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [(0, 1.5)]


def test_a_resume_forgets_the_steps_it_trains_again(tmp_path):
    """Died after logging steps 0-3 with a checkpoint at step 2 (and a torn last line): the
    resume drops steps 2, 3 and the torn line, and the open logger appends after step 1."""
    from meshrl.services.learner.metric_logger import JsonlLogger, forget_steps_from

    path = tmp_path / "metrics.jsonl"
    logger = JsonlLogger(path)
    for step in range(4):
        logger.log(step, {"loss": float(step)})
    with path.open("a") as f:
        f.write('{"step": 4, "lo')
    assert forget_steps_from(path, 2) == 3
    logger.log(2, {"loss": 20.0})
    logger.close()
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(r["step"], r["loss"]) for r in rows] == [(0, 0.0), (1, 1.0), (2, 20.0)]
    assert forget_steps_from(tmp_path / "none.jsonl", 0) == 0
