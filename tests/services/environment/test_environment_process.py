"""The environment service under the mesh's process contract (what `meshrl train` starts):
`--nats --run-id --config`, the built-in from the run's environment section served under the
run's name, on real NATS and a real port: it announces its address in the run KV, an episode
played at that address gets its reward, SIGTERM stops it and withdraws the address; a config
without the section exits 2 before NATS."""

import asyncio
import json
import signal
import subprocess
import sys
import time

import grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc
from meshrl.transport.bus.registry import service_addresses
from tests.fixtures.run_config import write_config


def service(nats_url: str, run_id: str, config: str) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "meshrl.services.environment",
            "--nats",
            nats_url,
            "--run-id",
            run_id,
            "--config",
            config,
            "--replica-id",
            "environment-0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


async def announced(bus, proc, within_s: float = 60.0) -> list[str]:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        addresses = await service_addresses(bus.state, "environment")
        if addresses or proc.poll() is not None:
            return addresses
        await asyncio.sleep(0.2)
    return []


async def test_serves_the_runs_environment_announced_in_the_run_kv(tmp_path, nats_url, run_id, bus):
    config = write_config(tmp_path, environment={"name": "arith", "builtin": "tool_arith"})
    proc = service(nats_url, run_id, config)
    try:
        [address] = await announced(bus, proc)
        async with grpc.aio.insecure_channel(address) as channel:
            stub = env_pb2_grpc.EnvironmentServiceStub(channel)
            await stub.Reset(
                env_pb2.ResetRequest(episode_id="g/0", environment="arith", ground_truth_json='"12"'), timeout=10
            )
            calc = env_pb2.ToolCall(id="c", name="calculator", arguments_json=json.dumps({"expression": "3*4"}))
            hint = await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=0, tool_calls=[calc]), timeout=10)
            final = await stub.Step(env_pb2.StepRequest(episode_id="g/0", turn=1, text="12"), timeout=10)
        assert hint.observation[0].content == "12" and final.done and final.reward == 1.0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = await asyncio.to_thread(proc.communicate, timeout=30)
    assert proc.returncode == 0, out
    assert await service_addresses(bus.state, "environment") == []


def test_a_config_without_the_section_exits_2_naming_it(tmp_path, nats_url, run_id):
    proc = service(nats_url, run_id, write_config(tmp_path))
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "no `environment: {name: ..., builtin: ...}` section" in out, out


async def test_its_metrics_count_open_episodes(tmp_path, nats_url, run_id, bus):
    import urllib.request

    config = write_config(tmp_path, environment={"name": "calc", "builtin": "calculator", "max_episodes": 9})
    proc = service(nats_url, run_id, config)
    try:
        [address] = await announced(bus, proc)
        [metrics_url] = [e.json()["url"] for e in await bus.state.entries("metrics.environment")]
        async with grpc.aio.insecure_channel(address) as channel:
            stub = env_pb2_grpc.EnvironmentServiceStub(channel)
            for i in range(3):
                await stub.Reset(env_pb2.ResetRequest(episode_id=f"g/{i}"), timeout=10)
            await stub.Close(env_pb2.CloseRequest(episode_id="g/0"), timeout=10)
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(metrics_url, timeout=10).read().decode())
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.communicate, timeout=30)
    values = {
        line.split("{")[0].split(" ")[0]: float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("meshrl_env_")
    }
    assert values == {"meshrl_env_open_episodes": 2.0, "meshrl_env_max_episodes": 9.0}
