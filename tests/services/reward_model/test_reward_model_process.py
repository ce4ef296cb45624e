"""The reward-model service under the mesh's process contract (what `meshrl train` starts):
`--nats --run-id --config`, settings from the run's reward_model section, on real NATS and a
real port. It scores through the reward service's own client, announces its address in the
run KV, and stops cleanly on SIGTERM; a config without the section exits 2 before NATS."""

import asyncio
import signal
import socket
import subprocess
import sys

import pytest
import yaml

from meshrl.config.load import load_config
from meshrl.config.reward_model import called_components
from meshrl.services.reward.components import build_components
from meshrl.services.reward.external import check_reachable
from meshrl.services.reward.types import RewardItem, Status
from meshrl.transport.bus.registry import service_addresses
from tests.fixtures.run_config import write_config
from tests.fixtures.tiny_reward_model import build_tiny_reward_model

RM = {"name": "rm", "kind": "reward_model", "weight": 0.5, "timeout_s": 30}


def service(nats_url: str, run_id: str, config: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "meshrl.services.reward_model",
            "--nats",
            nats_url,
            "--run-id",
            run_id,
            "--config",
            config,
            "--replica-id",
            "reward_model-0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.fixture
def held_port():
    """A port bound here with SO_REUSEPORT, never listened on, for the test's length: the service
    binds it too (every replica does, SO_REUSEPORT), no other process is handed it meanwhile (a
    port picked free and released could be), and it takes no connection."""
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


async def test_serves_the_runs_reward_model_and_stops_cleanly(tmp_path, nats_url, run_id, bus, held_port):
    rm_dir = build_tiny_reward_model(tmp_path / "rm")
    # plaintext: this test is the process contract; the run's mutual TLS (the default since
    # d6afc76) needs the launcher's certificates and is tested in tests/unit/launch/test_run_grpc_tls.py
    config = write_config(
        tmp_path,
        reward_model={"path": rm_dir, "grpc_port": held_port, "clip": 0.5},
        reward={"components": [RM]},
        launch={"grpc_tls": "off"},
    )
    proc = service(nats_url, run_id, config)
    [component] = build_components(called_components(load_config(config)), run_id)
    try:
        await check_reachable(component, within_s=60.0)
        scores = await component.score(
            [
                RewardItem(id="a", prompt="what is 3+4 ? ", response="7"),
                RewardItem(id="b", prompt="what is 3+4 ? ", response="maybe 8"),
            ]
        )
        assert [s.status for s in scores] == [Status.OK, Status.OK]
        assert all(abs(s.value) <= 0.5 and "raw_score" in s.details for s in scores)
        assert await service_addresses(bus.state, "reward_model") == [component.address]
    finally:
        await component.close()
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, out


def test_a_config_without_the_section_exits_2_naming_it(tmp_path, nats_url, run_id):
    config = write_config(tmp_path)
    proc = service(nats_url, run_id, config)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out
    assert "no reward_model section" in out
    assert "reward_model" in yaml.safe_load(open(config))  # null in a resolved config
