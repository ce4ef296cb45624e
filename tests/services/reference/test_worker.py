"""The reference stage over a real NATS: a Group on `scored` arrives on `ready` with one
reference log-prob per response token, the same numbers the scorer gives, plus a timing;
and the service process (python -m meshrl.services.reference) does it too and exits 0 on
SIGTERM."""

import asyncio
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.config.load import dump_config, load_config
from meshrl.services.reference.worker import ReferenceWorker, add_ref_logprobs
from meshrl.transport.bus import Bus
from meshrl.transport.bus.codec import pack_float32, pack_int32, unpack_float32

PROMPT = np.array([3, 17, 42, 9, 11], dtype=np.int32)
RESPONSES = [np.array(r, dtype=np.int32) for r in ([20, 21, 22], [30], [40, 41, 42, 43, 44, 45])]


def make_group(run_id: str, group_id: str) -> common_pb2.Group:
    task = common_pb2.PromptTask(run_id=run_id, group_id=group_id, prompt_token_ids=pack_int32(PROMPT))
    samples = [
        common_pb2.Sample(
            index=i,
            response_token_ids=pack_int32(r),
            reward=float(i),
            behaviour_logprobs=pack_float32(np.full(len(r), -1.0)),
        )
        for i, r in enumerate(RESPONSES)
    ]
    return common_pb2.Group(run_id=run_id, group_id=group_id, task=task, samples=samples, scored=True)


def check_enriched(group: common_pb2.Group, scorer, replica: str) -> None:
    expected = scorer.score([PROMPT] * len(RESPONSES), RESPONSES)
    assert group.has_ref_logprobs and group.scored
    for sample, want, response in zip(group.samples, expected, RESPONSES):
        got = unpack_float32(sample.ref_logprobs)
        assert len(got) == len(response)
        np.testing.assert_allclose(got, want, atol=1e-6)
    assert [s.reward for s in group.samples] == [0.0, 1.0, 2.0]  # untouched
    timing = group.timings[-1]
    assert (timing.stage, timing.service) == ("reference", replica)
    assert timing.start_unix <= timing.end_unix


def test_add_ref_logprobs_fills_every_sample(tiny_scorer):
    group = add_ref_logprobs(tiny_scorer, make_group("r", "g0"), "reference-0")
    check_enriched(group, tiny_scorer, "reference-0")


async def pull_one(bus, timeout_s=60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        batch = await bus.pull("ready", "learner", max_msgs=1, timeout=1.0)
        if batch:
            await batch[0].ack()
            return batch[0].message
    raise AssertionError(f"nothing arrived on ready within {timeout_s}s")


async def test_scored_group_arrives_on_ready(nats_url, run_id, tiny_scorer):
    bus = await Bus.connect(nats_url, run_id, name="test")
    await bus.ensure_streams()
    worker = ReferenceWorker(bus, tiny_scorer, "reference-0")
    consumer = asyncio.create_task(bus.worker("scored", "reference", worker.handle))
    try:
        await bus.publish("scored", make_group(run_id, "g-1"), msg_id="g-1")
        group = await pull_one(bus)
        assert group.group_id == "g-1"
        check_enriched(group, tiny_scorer, "reference-0")
        for _ in range(100):  # counted after the publish that the test already saw
            if worker.groups_done:
                break
            await asyncio.sleep(0.05)
        assert worker.groups_done == 1
    finally:
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)
        await bus.close()


async def test_a_group_the_rollout_dropped_passes_through_without_log_probs(nats_url, run_id, tiny_scorer):
    bus = await Bus.connect(nats_url, run_id, name="test")
    worker = ReferenceWorker(bus, tiny_scorer, "reference-0")
    try:
        await bus.ensure_streams()
        group = make_group(run_id, "g-2")
        group.drop_reason = "env_error: the environment answered INTERNAL"
        group.samples[1].response_token_ids = b""  # a half-finished episode: nothing to score
        await worker.handle(group)
        got = await pull_one(bus, timeout_s=10)
        assert got.drop_reason == group.drop_reason and not got.has_ref_logprobs
        assert all(not s.ref_logprobs for s in got.samples)
    finally:
        await bus.close()


@pytest.fixture
def config_file(tmp_path, tiny_model_dir):
    cfg = load_config(
        base={
            "model": {"path": str(tiny_model_dir)},
            "data": {"train": "x.jsonl"},
            "algorithm": {"preset": "grpo"},
            "reference": {"micro_batch_size": 2},
        }
    )
    path = tmp_path / "config.yaml"
    path.write_text(dump_config(cfg))
    return path


@pytest.mark.slow  # a fresh process imports torch and transformers: 10-40 s here
async def test_service_process_end_to_end(nats_url, run_id, config_file, tiny_scorer, tmp_path):
    bus = await Bus.connect(nats_url, run_id, name="test")
    await bus.ensure_streams()
    log = (tmp_path / "reference.log").open("w+")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "meshrl.services.reference",
            "--nats",
            nats_url,
            "--run-id",
            run_id,
            "--config",
            str(config_file),
            "--replica-id",
            "reference-3",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        await bus.publish("scored", make_group(run_id, "g-p"), msg_id="g-p")
        group = await pull_one(bus, timeout_s=120)
        check_enriched(group, tiny_scorer, "reference-3")
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
        await bus.close()
    log.seek(0)
    output = log.read()
    assert rc == 0, output
    assert "reference-3: ReferenceService on port" in output and "stopped after 1 groups" in output


def test_service_with_a_missing_model_exits_2(tmp_path):
    cfg = load_config(base={"model": {"path": str(tmp_path / "nope")}, "data": {"train": "x.jsonl"}})
    path = tmp_path / "config.yaml"
    path.write_text(dump_config(cfg))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshrl.services.reference",
            "--nats",
            "nats://127.0.0.1:1",
            "--run-id",
            "r",
            "--config",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr
