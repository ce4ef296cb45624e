"""`python -m meshrl.services.reward` start-up failures: clear message, exit 2, fast."""

import subprocess
import sys
import time

import yaml

from meshrl.addresses import free_port


def write_config(tmp_path, components) -> str:
    cfg = {"model": {"path": "unused"}, "data": {"train": "unused.jsonl"}, "reward": {"components": components}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def run_service(config: str) -> tuple[subprocess.CompletedProcess, float]:
    cmd = [
        sys.executable,
        "-m",
        "meshrl.services.reward",
        "--nats",
        "nats://127.0.0.1:1",
        "--run-id",
        "r",
        "--config",
        config,
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return proc, time.monotonic() - t0


def test_unreachable_external_fails_naming_component_and_address(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    config = write_config(tmp_path, [{"name": "judge", "kind": "external", "address": address, "timeout_s": 2}])
    proc, took = run_service(config)
    assert proc.returncode == 2, proc.stderr
    assert f"reward component 'judge': external reward service at {address} is not reachable" in proc.stderr
    assert took < 20  # 5 s health window + interpreter start on a loaded 2-core box


def test_bad_params_fail_naming_key(tmp_path):
    config = write_config(tmp_path, [{"name": "fmt", "kind": "regex", "params": {"patern": "x"}}])
    proc, _ = run_service(config)
    assert proc.returncode == 2
    assert "reward.components[fmt].params for kind 'regex' are invalid" in proc.stderr
    assert "Allowed params: pattern, flags" in proc.stderr
