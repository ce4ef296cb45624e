"""The whole reward service as a process (`python -m meshrl.services.reward`) on a real
nats-server, with the example external reward service: a group in, scored out, SIGTERM
stops it cleanly (exit 0); while it runs its gRPC address is announced in the run KV."""

import signal
import subprocess
import sys

import pytest
import yaml

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus.registry import service_addresses
from meshrl.transport.rpc import wait_healthy
from tests.services.reward.test_worker import make_group


def write_reward_config(tmp_path, reward: dict) -> str:
    """A run config for a reward process: its `reward` section; no reference, so it publishes to `ready`."""
    cfg = {
        "model": {"path": "unused"},
        "data": {"train": "unused.jsonl"},
        "algorithm": {"preset": "dapo"},
        "reward": reward,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def write_config(tmp_path, external_address: str) -> str:
    components = [
        {"name": "math", "kind": "math_verify", "weight": 1.0},
        {"name": "keywords", "kind": "external", "address": external_address, "weight": 0.5},
    ]
    return write_reward_config(tmp_path, {"components": components})


@pytest.mark.timeout(120)
async def test_service_process_scores_group_and_stops_on_sigterm(
    bus, nats_url, run_id, tmp_path, example_reward_address
):
    cmd = [
        sys.executable,
        "-m",
        "meshrl.services.reward",
        "--nats",
        nats_url,
        "--run-id",
        run_id,
        "--config",
        write_config(tmp_path, example_reward_address),
        "--replica-id",
        "reward-7",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        await bus.publish("generated", make_group(run_id, "g1"), msg_id="g1")
        got = await bus.pull("ready", "learner", max_msgs=1, timeout=60)
        assert got, "no scored group on ready within 60 s"
        await got[0].ack()
        group: common_pb2.Group = got[0].message
        (address,) = await service_addresses(bus.state, "reward")  # announced for evaluation
        await wait_healthy(address, timeout=10)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "reward-7: stopped after 1 groups" in out
    # math 1/0/1; keywords (answer, because; max 20 chars): 1/2, 0, 0
    assert [s.reward for s in group.samples] == pytest.approx([1 + 0.25, 0.0, 1.0])
    assert [c.name for c in group.samples[0].reward_components] == ["math", "keywords"]
    assert group.timings[-1].service == "reward-7"
    assert await service_addresses(bus.state, "reward") == []  # withdrawn on a clean stop
