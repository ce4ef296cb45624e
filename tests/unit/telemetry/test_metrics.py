"""start_metrics: a real /metrics endpoint scraped over HTTP, with service labels."""
import socket
import sys
import types
import urllib.request

import pytest

from meshrl.ops.telemetry.metrics import prometheus_name, start_metrics
from tests.fixtures.prometheus import sample
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
    text = scrape(handle)
    ids = dict(service="rollout", replica="1", run="run-a")
    assert sample(text, "meshrl_groups_generated_total", **ids) == 5.0
    assert sample(text, "meshrl_process_memory_rss_bytes", **ids) > 10e6  # a python process
    assert sample(text, "meshrl_process_cpu_cores", **ids) >= 0.0
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
    handle.set_values({"reward": 0.25, "clip_ratio/low": 0.125, "kl": float("nan"),
                       "entropy": None, "note": "text"})
    handle.set_values({"reward": 0.5, "kl": float("inf")})
    text = handle.scrape()
    assert sample(text, "meshrl_train_reward") == 0.5
    assert sample(text, "meshrl_train_clip_ratio_low") == 0.125
    assert "meshrl_train_kl" not in text and "meshrl_train_entropy" not in text
    assert prometheus_name("time/step", "m_") == "m_time_step"


def test_gpu_gauges_when_torch_cuda_is_available(monkeypatch):
    cuda = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: 2,
                                 memory_allocated=lambda i: 1000 * (i + 1),
                                 memory_reserved=lambda i: 4000, utilization=lambda i: 50 + i)
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
