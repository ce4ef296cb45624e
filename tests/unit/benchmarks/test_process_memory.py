"""The mesh memory sampler: processes labelled by the service they descend from, PSS and
RSS summed per label, meshrl's /dev/shm files counted. A real process tree, no fakes."""

import subprocess
import sys
import time

import psutil

from benchmarks.process_memory import PeakSampler, label_tree, sample_tree, service_of, shm_bytes

HOLD = "import sys, time; x = bytearray(int(sys.argv[1])); x[::4096] = b'1' * len(x[::4096]); time.sleep(30)"
CHILD = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', sys.argv[1], '60000000']);time.sleep(30)"


def test_service_of_reads_the_process_contract():
    assert service_of(["python", "-m", "meshrl.services.rollout", "--nats", "x"]) == "rollout"
    assert service_of(["meshrl", "serve", "reward", "--nats", "x"]) == "reward"
    assert service_of(["/venv/bin/nats-server", "-js"]) == "nats"
    assert service_of(["VLLM::EngineCore"]) is None  # inherits its parent's label


def test_a_services_children_count_as_that_service(tmp_path):
    # launcher → "learner" (argv names meshrl.services.learner) → a child holding 60 MB
    service = subprocess.Popen([sys.executable, "-c", CHILD, HOLD, "-m", "meshrl.services.learner"])
    try:
        root = psutil.Process(service.pid)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not root.children():
            time.sleep(0.1)
        time.sleep(1.0)  # the child touches its 60 MB
        labels = label_tree(root)
        assert sorted(labels.values()) == ["learner", "learner"]
        sample = sample_tree(root)
        assert sample.pss["learner"] > 60e6 and sample.rss["learner"] >= sample.pss["learner"]
        assert sample.pss_total == sample.pss["learner"] + sample.pss["shm"]
    finally:
        for proc in psutil.Process(service.pid).children(recursive=True) + [psutil.Process(service.pid)]:
            proc.kill()


def test_meshrl_shm_files_count_by_the_pages_they_hold(tmp_path):
    run = tmp_path / "meshrl-run-a"
    run.mkdir()
    (run / "weights-v1.safetensors").write_bytes(b"x" * 3 * 4096)
    with open(run / "sparse.tmp", "wb") as f:
        f.truncate(10**9)  # a sparse 1 GB file holds no pages
    (tmp_path / "other").write_bytes(b"y" * 4096)  # not meshrl's
    assert shm_bytes(tmp_path) == 3 * 4096


def test_the_peak_sampler_stops_with_the_process_and_reports_per_service():
    proc = subprocess.Popen([sys.executable, "-c", HOLD.replace("30", "2"), "50000000"])
    sampler = PeakSampler(proc.pid, every=0.2).start()
    proc.wait()
    sampler.join(timeout=5)
    assert sampler.peak_pss.pss["launcher"] > 50e6
    assert "launcher" in sampler.report() and "PSS" in sampler.report()
