"""A rollout replica whose vLLM engine dies stops reporting SERVING and exits for a restart.

`python -m meshrl.services.rollout` as its own process with a real engine; once READY the
test watches its grpc.health.v1 status (the Watch stream, as a load balancer would), SIGKILLs
the engine-core process vLLM spawned (as the OOM killer would), and expects NOT_SERVING on the
stream and the process to exit 1 naming the dead engine (services/rollout/engine_watch.py).
Before the watch, such a replica answered SERVING with an engine that could serve nothing.

Run: .venv/bin/python -m pytest tests/services/rollout/test_engine_death.py -m slow
"""

import asyncio
import os
import signal
import sys

import grpc
import psutil
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.services.rollout.test_main import START_TIMEOUT_S, read_until_ready, write_config

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]
STATUS = health_pb2.HealthCheckResponse.ServingStatus.Name


def engine_core(rollout_pid: int) -> psutil.Process:
    """vLLM's engine-core process among the rollout process's children (it names itself)."""
    children = psutil.Process(rollout_pid).children(recursive=True)
    cores = [c for c in children if "EngineCore" in " ".join([c.name(), *c.cmdline()])]
    assert len(cores) == 1, [(c.pid, c.name(), c.cmdline()) for c in children]
    return cores[0]


async def statuses(address: str, seen: list[str]) -> None:
    """Append every status the replica's Watch stream sends until the stream ends."""
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            async for reply in health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service="")):
                seen.append(STATUS(reply.status))
        except grpc.aio.AioRpcError:
            seen.append("stream ended")


async def test_a_dead_engine_is_not_serving_and_the_replica_exits(bus, nats_url, run_id, tiny_model_dir, tmp_path):
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "meshrl.services.rollout",
        "--nats",
        nats_url,
        "--run-id",
        run_id,
        "--config",
        write_config(tmp_path, tiny_model_dir),
        "--replica-id",
        "rollout-d",
        "--grpc-port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    try:
        ready, _ = await asyncio.wait_for(read_until_ready(proc), START_TIMEOUT_S)
        output = asyncio.create_task(proc.stdout.read())
        seen: list[str] = []
        watch = asyncio.create_task(statuses(ready["grpc"], seen))
        while not seen:
            await asyncio.sleep(0.1)
        assert seen == ["SERVING"]

        core = engine_core(proc.pid)
        os.kill(core.pid, signal.SIGKILL)
        code = await asyncio.wait_for(proc.wait(), 60)
        await asyncio.wait_for(watch, 10)
        log = (await output).decode(errors="replace")
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()

    assert seen[:2] == ["SERVING", "NOT_SERVING"], seen
    assert code == 1, log[-3000:]
    assert "its vLLM engine died" in log, log[-3000:]
