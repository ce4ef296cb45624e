"""The reward service process serves Prometheus metrics: announced in the run KV, counting
the groups it scored and each component's results by status, with the process's resource
gauges under the labels service="reward", replica=<id>; the entry goes on SIGTERM."""

import signal
import subprocess
import sys

import pytest
import yaml

from meshrl.telemetry.service_metrics import metrics_key
from tests.fixtures.prometheus import metrics_url, promtool_check, sample, wait_for_sample
from tests.services.reward.test_worker import make_group

GROUPS = 2


def write_config(tmp_path) -> str:
    cfg = {
        "run": {"dir": str(tmp_path / "run")},
        "model": {"path": "unused"},
        "data": {"train": "unused.jsonl"},
        "algorithm": {"preset": "dapo"},  # → ready
        "reward": {
            "components": [
                {"name": "math", "kind": "math_verify", "weight": 1.0},
                {"name": "len", "kind": "length_penalty", "weight": 0.5, "params": {"max_len": 10, "unit": "tokens"}},
            ]
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


async def score_groups(bus, run_id: str, n: int) -> None:
    for i in range(n):
        await bus.publish("generated", make_group(run_id, f"g{i}"), msg_id=f"g{i}")
    for _ in range(n):
        got = await bus.pull("ready", "learner", max_msgs=1, timeout=60)
        assert got, "no scored group on ready within 60 s"
        await got[0].ack()


@pytest.mark.timeout(120)
async def test_metrics_count_scored_groups(bus, nats_url, run_id, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "meshrl.services.reward",
        "--nats",
        nats_url,
        "--run-id",
        run_id,
        "--config",
        write_config(tmp_path),
        "--replica-id",
        "reward-m",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = await metrics_url(bus.state, "reward", "reward-m")
        await score_groups(bus, run_id, GROUPS)
        ids = dict(service="reward", replica="reward-m", run=run_id)
        text = await wait_for_sample(url, "meshrl_groups_scored_total", GROUPS, **ids)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert f"METRICS {url}" in out
    assert sample(text, "meshrl_groups_scored_total", **ids) == GROUPS
    samples = GROUPS * 3  # make_group has 3 samples
    for component in ("math", "len"):
        assert sample(text, "meshrl_reward_component_scores_total", component=component, status="ok", **ids) == samples
    assert sample(text, "process_resident_memory_bytes") > 0  # prometheus_client's process collector
    promtool_check(text)
    assert await bus.state.get(metrics_key("reward", "reward-m")) is None  # withdrawn on a clean stop
