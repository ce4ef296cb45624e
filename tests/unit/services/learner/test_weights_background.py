"""A shm push off the trainer's critical path (services/learner/weights.py): `publish` returns
once the weights are staged, the file, its BLAKE3 digest and the notice follow in the
background, an update made meanwhile (the next optimizer step) does not reach the file, the
receiver's check accepts it, the next push waits for the one in flight, and a failed export
surfaces at `drain`. The transport is the real ShmTransport in a temporary root; the run KV
is `RecordingKV`, a fake standing in for the bus's KV in this unit test of the publisher.

Run: .venv/bin/python -m pytest tests/unit/services/learner/test_weights_background.py -q
"""

import asyncio
from types import SimpleNamespace

import blake3
import pytest
import torch
from safetensors import safe_open

from meshrl.config.load import load_config
from meshrl.services.learner.weights import WeightsPublisher, publisher_for, transport_name
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights import ShmTransport, open_verified


class RecordingKV:
    """Fake run KV: remembers every put, in order."""

    def __init__(self):
        self.puts = []

    async def put(self, key, value):
        self.puts.append((key, value))


def publisher(tmp_path, **kw) -> tuple[WeightsPublisher, RecordingKV]:
    kv = RecordingKV()
    transport = ShmTransport("r", root=str(tmp_path))
    return WeightsPublisher(SimpleNamespace(state=kv), transport, "r", **kw), kv


def read_back(path) -> dict:
    with safe_open(str(path), framework="pt") as f:
        return {name: f.get_tensor(name) for name in f.keys()}


def notices(kv: RecordingKV) -> list:
    return [value for key, value in kv.puts if key == WEIGHTS_NOTICE_KEY]


def test_publish_returns_staged_the_rest_follows_and_a_later_update_misses_the_file(tmp_path):
    live = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3)}
    pub, kv = publisher(tmp_path, dtype=torch.bfloat16)

    async def push():
        figures = await pub.publish(live, version=1, step=0)
        live["w"].add_(100.0)  # the next optimizer step, while the export runs
        return figures, await pub.drain()

    staged, exported = asyncio.run(push())
    assert set(staged) == {"time/weights_stage"}
    assert {"time/weights_serialise", "time/weights_push", "weights/bytes"} <= set(exported)
    (notice,) = notices(kv)
    assert notice.blake3 and not notice.sha256 and notice.version == 1
    got = read_back(notice.location)
    assert got["w"].dtype == torch.bfloat16 and got["w"].tolist() == [[0, 1, 2], [3, 4, 5]]
    data = open(notice.location, "rb").read()
    assert notice.blake3 == blake3.blake3(data).hexdigest() and notice.size_bytes == len(data)
    open_verified(notice.location, notice).close()  # the rollout's own check accepts it


def test_the_next_push_waits_for_the_one_in_flight(tmp_path):
    pub, kv = publisher(tmp_path)

    async def two_pushes():
        await pub.publish({"w": torch.zeros(4)}, version=1, step=0)
        await pub.publish({"w": torch.ones(4)}, version=2, step=1)  # drains v1 first
        return await pub.drain()

    asyncio.run(two_pushes())
    assert [n.version for n in notices(kv)] == [1, 2]
    assert read_back(notices(kv)[1].location)["w"].tolist() == [1.0] * 4


def test_a_failed_background_export_surfaces_at_drain(tmp_path):
    pub, kv = publisher(tmp_path)

    async def failing():
        pub.transport.staging_path = lambda version: tmp_path / "no-such-dir" / "w.tmp"
        await pub.publish({"w": torch.zeros(2)}, version=1, step=0)
        await pub.drain()

    with pytest.raises(FileNotFoundError):
        asyncio.run(failing())
    assert notices(kv) == []


def test_in_the_foreground_the_file_is_out_when_publish_returns(tmp_path):
    pub, kv = publisher(tmp_path, background=False)

    async def push():
        return await pub.publish({"w": torch.zeros(2)}, version=1, step=0)

    figures = asyncio.run(push())
    assert "time/weights_serialise" in figures and len(notices(kv)) == 1
    assert pub.staging.buffers == {}  # written from the live tensors: no host copy kept


def test_transport_auto_is_collective_on_cuda_shm_on_cpu():
    assert transport_name("auto", torch.device("cuda")) == "collective"
    assert transport_name("auto", torch.device("cpu")) == "shm"
    assert transport_name("objectstore", torch.device("cuda")) == "objectstore"
    cfg = load_config(base={"model": {"path": "m"}, "data": {"train": "x.jsonl"}})
    assert (cfg.learner.weights_transport, cfg.learner.push_in_background) == ("auto", True)
    pub, transport = publisher_for(
        cfg, SimpleNamespace(state=None), "r", device=torch.device("cpu"), tied_embeddings=False
    )
    assert isinstance(pub, WeightsPublisher) and pub.transport is transport and pub.background
