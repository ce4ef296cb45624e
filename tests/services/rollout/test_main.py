"""`python -m meshrl.services.rollout` as its own process: it loads the run's current weights
before taking work, announces its gRPC port and its /metrics URL, serves a task from NATS
(counted on /metrics), stops on SIGTERM: vLLM's engine core exits on its own (vLLM does not
have to kill it: services/rollout/vllm_exit_plugin.py), leaving no shared-memory segment and
none of its socket files (ipc_folder.py), and nothing follows the service's last line
(meshrl/quick_exit.py).

Starts a second vLLM engine (its own process), so it is the slowest rollout test.
Run: .venv/bin/python -m pytest tests/services/rollout/test_main.py -m slow
"""

import asyncio
import hashlib
import signal
import sys
import tempfile
import time
from pathlib import Path

import grpc
import pytest
import yaml
from safetensors.torch import save_file

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.launch.shm import mapped_anywhere
from meshrl.telemetry.service_metrics import metrics_key
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.registry import service_key
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from tests.fixtures.prometheus import metrics_url, promtool_check, sample, wait_for_sample
from tests.fixtures.vllm import perturbed_weights, prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]
START_TIMEOUT_S = 400


def write_config(tmp_path, model_dir) -> str:
    config = {
        "run": {"name": "rollout-main-test", "dir": str(tmp_path / "run")},
        "model": {"path": str(model_dir)},
        "data": {"train": str(tmp_path / "unused.jsonl")},
        "rollout": {"kv_cache_gb": 0.25, "max_model_len": 256},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


async def publish_v1(bus, run_id, model_dir, tmp_path) -> None:
    path = tmp_path / "weights-v1.safetensors"
    save_file(perturbed_weights(model_dir, seed=4), str(path))
    data = path.read_bytes()
    await bus.state.put(
        WEIGHTS_NOTICE_KEY,
        pb.WeightsNotice(
            run_id=run_id,
            version=1,
            transport="shm",
            location=str(path),
            format="safetensors",
            sha256=hashlib.sha256(data).hexdigest(),
            size_bytes=len(data),
        ),
    )


async def read_until_ready(proc) -> tuple[str, list[str]]:
    """The READY line's fields, and the lines before it (for a failure message)."""
    lines = []
    async for raw in proc.stdout:
        line = raw.decode(errors="replace").rstrip()
        lines.append(line)
        if line.startswith("READY "):
            return dict(kv.split("=", 1) for kv in line.split()[1:]), lines
    raise AssertionError("rollout exited before READY:\n" + "\n".join(lines[-40:]))


async def test_service_process_end_to_end(bus, nats_url, run_id, tiny_model_dir, tmp_path):
    await publish_v1(bus, run_id, tiny_model_dir, tmp_path)
    segments_before = shm_segments()
    loaded = await bus.nc.subscribe(names.weights_loaded_subject(run_id))
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
        "rollout-p",
        "--grpc-port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    drain = None
    try:
        ready, _ = await asyncio.wait_for(read_until_ready(proc), START_TIMEOUT_S)
        drain = asyncio.create_task(proc.stdout.read())  # keep the pipe from filling up
        assert ready["replica"] == "rollout-p" and ready["version"] == "1"
        report = pb.WeightsLoaded.FromString((await loaded.next_msg(timeout=5)).data)
        assert (report.version, report.ok, report.replica_id) == (1, True, "rollout-p")
        assert (await bus.state.get(service_key("rollout", "rollout-p"))).json()["grpc"] == ready["grpc"]

        async with grpc.aio.insecure_channel(ready["grpc"]) as channel:
            status = await rollout_pb2_grpc.RolloutServiceStub(channel).GetStatus(
                rollout_pb2.GetStatusRequest(), timeout=10
            )
        assert (status.replica_id, status.policy_version, status.ready) == ("rollout-p", 1, True)

        task = prompt_task(_tokenizer(tiny_model_dir), group_id="g-proc", n=2, run_id=run_id, min_policy_version=1)
        await bus.publish("prompts", task, msg_id=task.group_id)
        (delivery,) = await bus.pull("generated", "reward", max_msgs=1, timeout=60)
        group = delivery.message
        assert (group.group_id, group.policy_version, group.rollout_replica) == ("g-proc", 1, "rollout-p")
        await check_metrics(bus, run_id, group)

        (ipc_folder,) = Path(tempfile.gettempdir()).glob(f"meshrl-vllm-ipc-{proc.pid}-*")
        assert any(path.is_socket() for path in ipc_folder.iterdir())  # vLLM bound its sockets there

        stop_asked = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0
        print(f"rollout: exit 0 {time.monotonic() - stop_asked:.1f} s after SIGTERM")  # a figure, not asserted
        log = (await drain).decode(errors="replace")
        assert "force killing remaining process" not in log  # vLLM's line when its grace ran out
        left = shm_segments() - segments_before - mapped_anywhere()
        assert not left, left  # none left unmapped
        assert not ipc_folder.exists()  # nor vLLM's socket files
        assert log.rstrip().endswith("rollout service: exiting")  # no teardown noise after it
        assert await bus.state.get(service_key("rollout", "rollout-p")) is None
        assert await bus.state.get(metrics_key("rollout", "rollout-p")) is None
    finally:
        await loaded.unsubscribe()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        if drain is not None:
            await asyncio.gather(drain, return_exceptions=True)


async def check_metrics(bus, run_id, group) -> None:
    """/metrics (URL from the run KV, announced before READY) counts the one group and its
    tokens, shows the held version, and the process tree's memory under service=rollout."""
    url = await metrics_url(bus.state, "rollout", "rollout-p", timeout_s=1)
    ids = dict(service="rollout", replica="rollout-p", run=run_id)
    text = await wait_for_sample(url, "meshrl_groups_generated_total", 1, **ids)
    assert sample(text, "meshrl_groups_generated_total", **ids) == 1
    tokens = sum(len(s.response_token_ids) // 4 for s in group.samples)
    assert tokens > 0 and sample(text, "meshrl_response_tokens_generated_total", **ids) == tokens
    assert sample(text, "meshrl_policy_version", **ids) == 1
    assert sample(text, "process_resident_memory_bytes") > 0  # prometheus_client's process collector
    promtool_check(text)


def _tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


def shm_segments() -> set[str]:
    """Names of the shared-memory segments in /dev/shm (vLLM's engine core makes a 160 MiB one)."""
    return {path.name for path in Path("/dev/shm").glob("psm_*")}
