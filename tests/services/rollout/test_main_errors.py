"""`python -m meshrl.services.rollout` start-up errors exit 2 with a message, before vLLM starts.

Run: .venv/bin/python -m pytest tests/services/rollout/test_main_errors.py -q
"""

import subprocess
import sys

import yaml

from tests.fixtures.ports import refused_port


def run_service(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "meshrl.services.rollout", "--run-id", "r", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_missing_config_exits_2_naming_the_file(tmp_path):
    done = run_service("--nats", "nats://127.0.0.1:1", "--config", str(tmp_path / "nope.yaml"))
    assert done.returncode == 2 and "nope.yaml does not exist" in done.stderr


def test_unreachable_nats_exits_2_before_building_the_engine(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump({"model": {"path": str(tmp_path / "no-model")}, "data": {"train": "unused.jsonl"}})
    )
    with refused_port() as port:
        done = run_service("--nats", f"nats://127.0.0.1:{port}", "--config", str(config))
    assert done.returncode == 2 and "cannot reach NATS" in done.stderr
    assert "vllm" not in done.stderr.lower()  # failed before vLLM was imported


def test_a_taken_metrics_port_exits_2_naming_the_key_before_vllm(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = tmp_path / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "model": {"path": str(tmp_path / "no-model")},
                    "data": {"train": "unused.jsonl"},
                    "telemetry": {"metrics_port": port},
                }
            )
        )
        done = run_service("--nats", "nats://127.0.0.1:1", "--config", str(config))
    assert done.returncode == 2 and f"telemetry.metrics_port={port}" in done.stderr
    assert "vllm" not in done.stderr.lower()
