"""start_metrics: a real /metrics endpoint scraped over HTTP, with service labels."""

import re
import socket
import subprocess
import sys
import types
import urllib.request

import psutil
import pytest

from meshrl.telemetry.latency import record_rpc, timed_stage
from meshrl.telemetry.metrics import current, prometheus_name, start_metrics, train_series
from tests.fixtures.prometheus import promtool_check, sample
from tests.fixtures.prometheus import scrape as scrape_url


def scrape(handle) -> str:
    return scrape_url(f"http://127.0.0.1:{handle.port}/metrics")


@pytest.fixture
def handle():
    h = start_metrics("rollout", replica="1", run_id="run-a")
    yield h
    h.close()


def test_scrape_shows_resource_gauges_and_counter_with_labels(handle):
    groups = handle.counter("meshrl_groups_generated_total", "groups published")
    groups.add(3)
    groups.add(2)
    child = subprocess.Popen(["sleep", "60"])  # a child of this process, as vLLM's engine core is
    try:
        child_rss = psutil.Process(child.pid).memory_info().rss
        text = scrape(handle)
    finally:
        child.kill()
        child.wait()
    ids = dict(service="rollout", replica="1", run="run-a")
    assert sample(text, "meshrl_groups_generated_total", **ids) == 5.0
    assert sample(text, "process_resident_memory_bytes") > 10e6  # a python process
    assert sample(text, "process_cpu_seconds_total") > 0.0  # a counter: rate() is cores busy
    # every live child counts (the test session may hold others: NATS, vLLM engines)
    assert sample(text, "meshrl_child_processes_resident_memory_bytes", **ids) >= child_rss > 0
    assert sample(text, "meshrl_child_processes_cpu_seconds_total", **ids) >= 0.0
    promtool_check(text)
    assert "meshrl_gpu_" not in text  # no torch imported here: GPU gauges are omitted


def test_counter_labels_histogram_and_gauge_callback(handle):
    handle.counter("meshrl_reward_calls_total").add(1, {"kind": "math"})
    handle.counter("meshrl_reward_calls_total").add(1, {"kind": "math"})  # same instrument
    hist = handle.histogram("meshrl_score_seconds", unit="s", buckets=[0.1, 1.0])
    for x in (0.05, 0.5, 2.0):
        hist.record(x)
    depth = [7]
    handle.gauge("meshrl_queue_depth", lambda: depth[0], "tasks waiting")
    text = scrape(handle)
    assert sample(text, "meshrl_reward_calls_total", kind="math", service="rollout") == 2.0
    assert sample(text, "meshrl_score_seconds_bucket", le="0.1") == 1.0
    assert sample(text, "meshrl_score_seconds_bucket", le="1.0") == 2.0
    assert sample(text, "meshrl_score_seconds_count") == 3.0
    assert sample(text, "meshrl_score_seconds_sum") == pytest.approx(2.55)
    assert sample(text, "meshrl_queue_depth", replica="1") == 7.0
    depth[0] = 2
    assert sample(scrape(handle), "meshrl_queue_depth") == 2.0


def test_same_name_other_kind_is_an_error(handle):
    handle.counter("meshrl_x")
    with pytest.raises(ValueError, match="already exists as a counter"):
        handle.histogram("meshrl_x")


def test_set_values_publishes_learner_metrics_and_skips_nan(handle):
    handle.set_values({"reward": 0.25, "clip_ratio/low": 0.125, "kl": float("nan"), "entropy": None, "note": "text"})
    handle.set_values({"reward": 0.5, "kl": float("inf")})
    text = handle.scrape()
    assert sample(text, "meshrl_train_reward") == 0.5
    assert sample(text, "meshrl_train_clip_ratio_low") == 0.125
    assert "meshrl_train_kl" not in text and "meshrl_train_entropy" not in text
    # NaN and inf are counted per key (the Prometheus rules' reward_nan / nonfinite alerts)
    assert sample(text, "meshrl_train_nonfinite_values_total", metric="kl") == 2
    assert sample(text, "meshrl_train_nonfinite_values_total", metric="reward") == 0
    assert prometheus_name("time/step", "m_") == "m_time_step"


def test_train_keys_become_names_promtool_accepts(handle):
    handle.set_values(
        {
            "time": 1700000000.5,
            "time/forward": 0.25,
            "time/step": 1.5,
            "groups/trained_total": 12,
            "latency_ms": 250,
            "weights/size_mb": 3,
            "memory/rss_bytes": 1024,
            "perf/wait_s": 2,
        }
    )
    text = handle.scrape()
    assert sample(text, "meshrl_train_timestamp_seconds") == 1700000000.5
    assert sample(text, "meshrl_train_step_phase_seconds", phase="forward") == 0.25
    assert sample(text, "meshrl_train_step_phase_seconds", phase="step") == 1.5
    assert sample(text, "meshrl_train_groups_trained") == 12  # a gauge: no _total
    assert sample(text, "meshrl_train_latency_seconds") == 0.25  # 250 ms in the base unit
    assert sample(text, "meshrl_train_weights_size_bytes") == 3e6
    assert sample(text, "meshrl_train_memory_rss_bytes") == 1024
    assert sample(text, "meshrl_train_perf_wait_seconds") == 2
    promtool_check(text)


def test_reward_components_stages_and_reasons_are_labels_of_one_metric(handle):
    handle.set_values(
        {
            "reward": 0.5,
            "reward/min": 0.0,
            "reward/max": 1.0,
            "reward/format": 0.75,
            "reward/math": 0.25,
            "reward/math_failed": 2,
            "perf/throughput": 900.0,
            "queue/generate": 3,
            "groups/dropped_stale": 1,
        }
    )
    text = handle.scrape()
    assert sample(text, "meshrl_train_reward_component", component="format") == 0.75
    assert sample(text, "meshrl_train_reward_component", component="math") == 0.25
    assert sample(text, "meshrl_train_reward_component_failed_scores", component="math") == 2
    assert sample(text, "meshrl_train_reward_max") == 1.0  # a statistic of the total, not a component
    assert sample(text, "meshrl_train_perf_throughput_tokens_per_second") == 900.0
    assert sample(text, "meshrl_train_queue_depth", stage="generate") == 3  # stages, reasons: labels too
    assert sample(text, "meshrl_train_groups_dropped", reason="stale") == 1
    assert not re.search(r"^meshrl_train_reward_(format|math)", text, re.M)
    assert train_series("reward/format") == ("meshrl_train_reward_component", {"component": "format"}, 1.0)
    promtool_check(text)


def test_rpc_and_stage_latency_histograms(handle):
    record_rpc("client", "/meshrl.reward.v1.RewardService/Score", "OK", 0.02)
    record_rpc("client", "/meshrl.reward.v1.RewardService/Score", "OK", 0.2)
    with timed_stage("reward.score"):
        pass
    text = handle.scrape()
    rpc = dict(
        rpc_side="client",
        rpc_service="meshrl.reward.v1.RewardService",
        rpc_method="Score",
        rpc_grpc_status="OK",
        service="rollout",
    )
    assert sample(text, "meshrl_rpc_duration_seconds_count", **rpc) == 2
    assert sample(text, "meshrl_rpc_duration_seconds_bucket", le="0.025", **rpc) == 1
    assert sample(text, "meshrl_rpc_duration_seconds_sum", **rpc) == pytest.approx(0.22)
    assert sample(text, "meshrl_stage_duration_seconds_count", stage="reward.score") == 1
    promtool_check(text)


def test_latency_without_a_metrics_endpoint_is_a_no_op():
    assert current() is None  # no handle open: nothing to record into, nothing raised
    record_rpc("server", "/x.Y/Z", "OK", 0.1)
    with timed_stage("x"):
        pass


def test_gpu_gauges_when_torch_cuda_is_available(monkeypatch):
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 2,
        memory_allocated=lambda i: 1000 * (i + 1),
        memory_reserved=lambda i: 4000,
        utilization=lambda i: 50 + i,
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    with start_metrics("learner", "0", "run-b") as h:
        text = scrape(h)
    assert sample(text, "meshrl_gpu_memory_allocated_bytes", gpu="1", service="learner") == 2000
    assert sample(text, "meshrl_gpu_memory_reserved_bytes", gpu="0") == 4000
    assert sample(text, "meshrl_gpu_utilization_ratio", gpu="1") == pytest.approx(0.51)


def test_busy_port_names_the_port_and_close_frees_it():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=f"127.0.0.1:{port}"):
            start_metrics("reward", "0", "run-c", port=port)
    h = start_metrics("reward", "0", "run-c", port=port)
    assert h.port == port
    h.close()
    h.close()  # idempotent
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2)
