"""`on_failure: stop` in the whole reward service process, on a real nats-server: the
example external service passes the start-up check, is then killed; the next group makes
the reward service exit 2 naming the component (final for the launcher), and the group is
not published to `ready`."""

import subprocess
import sys

import pytest
import yaml

from meshrl.addresses import free_port
from tests.fixtures.served import wait_port
from tests.services.reward.conftest import EXAMPLE
from tests.services.reward.test_worker import make_group


def write_config(tmp_path, address: str) -> str:
    cfg = {
        "model": {"path": "unused"},
        "data": {"train": "unused.jsonl"},
        "algorithm": {"preset": "dapo"},
        "reward": {
            "components": [
                {
                    "name": "judge",
                    "kind": "external",
                    "address": address,
                    "weight": 1.0,
                    "timeout_s": 2.0,
                    "retry": {"attempts": 1},
                    "on_failure": "stop",
                }
            ]
        },
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.mark.timeout(120)
async def test_stop_policy_exits_2_and_publishes_nothing(bus, nats_url, run_id, tmp_path):
    port = free_port()
    judge = subprocess.Popen([sys.executable, str(EXAMPLE), "--port", str(port)], stderr=subprocess.PIPE, text=True)
    wait_port(port, judge)
    cmd = [
        sys.executable,
        "-m",
        "meshrl.services.reward",
        "--nats",
        nats_url,
        "--run-id",
        run_id,
        "--config",
        write_config(tmp_path, f"127.0.0.1:{port}"),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:  # started (health checked) once it announces its RewardService
            if "RewardService on port" in line:
                break
        judge.kill()
        judge.wait()
        await bus.publish("generated", make_group(run_id, "g-stop"), msg_id="g-stop")
        out = proc.communicate(timeout=60)[0]
    finally:
        proc.kill()
        judge.kill()
    assert proc.returncode == 2, out
    assert "reward service: component 'judge' failed (ERROR: " in out and "its on_failure is stop" in out
    assert await bus.pull("ready", "learner", max_msgs=1, timeout=0.5) == []
