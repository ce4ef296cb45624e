"""A LoRA adapter as one weights file: the learner's publisher writes PEFT's tensors with
PEFT's config in the metadata and announces `peft_adapter`; the rollout side unpacks the
verified open file into a private PEFT directory that PEFT itself loads back to the same
adapter; bad files are refused; only the last few directories are kept; an adapter fetched
from the object store reaches a FAKE engine as a PEFT directory.

Run: .venv/bin/python -m pytest tests/unit/transport/weights/test_adapter.py -q
"""

import json
import os
import stat

import pytest
import torch
from transformers import AutoModelForCausalLM

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.config import load_config
from meshrl.config.lora import LoraSettings, engine_lora_rank
from meshrl.errors import ConfigError
from meshrl.services.learner.lora import adapter_config_json, adapter_state_dict, apply_lora
from meshrl.services.learner.weights import WeightsPublisher, transport_name
from meshrl.transport.weights import WeightsRejected, open_verified
from meshrl.transport.weights.adapter import ADAPTER_FORMAT, KEEP_ADAPTERS, AdapterDirs, adapter_metadata
from meshrl.transport.weights.file import write_safetensors
from meshrl.transport.weights.send import ShmTransport


def trained_adapter(model_dir):
    model = apply_lora(
        AutoModelForCausalLM.from_pretrained(model_dir),
        LoraSettings(rank=8, alpha=16, target_modules=["q_proj", "v_proj"]),
    )
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.1)  # as after some steps: B left 0
    return model


def notice_for(path, digest, size, version=1) -> pb.WeightsNotice:
    return pb.WeightsNotice(
        run_id="r",
        version=version,
        transport="shm",
        location=str(path),
        blake3=digest,
        size_bytes=size,
        format=ADAPTER_FORMAT,
    )


async def test_the_pushed_file_unpacks_to_what_peft_loads(tiny_model_dir, tmp_path):
    from peft import PeftModel

    model = trained_adapter(tiny_model_dir)
    transport = ShmTransport("adapter-test", root=str(tmp_path))
    publisher = WeightsPublisher(None, transport, "r", adapter_config=adapter_config_json(model))
    assert publisher.format == ADAPTER_FORMAT
    staging = transport.staging_path(1)
    digest, size = publisher.write(adapter_state_dict(model), staging)
    location = await transport.put(1, staging)
    dirs = AdapterDirs(tmp_path, "replica")
    with open_verified(location, notice_for(location, digest, size)) as opened:
        unpacked = dirs.unpack(opened, 1)
    assert stat.S_IMODE(os.stat(unpacked).st_mode) == 0o700
    assert sorted(os.listdir(unpacked)) == ["adapter_config.json", "adapter_model.safetensors"]
    loaded = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_dir), str(unpacked))
    ids = torch.randint(5, 100, (2, 10))
    with torch.no_grad():
        torch.testing.assert_close(loaded(ids).logits, model(ids).logits)
    assert json.loads((unpacked / "adapter_config.json").read_text())["r"] == 8
    transport.close()


def test_a_file_without_a_peft_config_is_refused(tmp_path):
    tensors = {"a": torch.ones(2)}
    dirs = AdapterDirs(tmp_path, "replica")
    for name, metadata in (
        ("plain", {"format": "pt"}),
        ("not-json", adapter_metadata("{")),
        ("not-lora", adapter_metadata(json.dumps({"peft_type": "IA3"}))),
    ):
        path = tmp_path / f"{name}.safetensors"
        digest, size = write_safetensors(tensors, path, metadata, digest="blake3")
        with open_verified(path, notice_for(path, digest, size)) as opened:
            with pytest.raises(WeightsRejected, match="adapter v1"):
                dirs.unpack(opened, 1)
    assert dirs.dirs == [] and not [p for p in tmp_path.iterdir() if p.is_dir()]


def test_only_the_last_directories_are_kept(tmp_path):
    path = tmp_path / "a.safetensors"
    digest, size = write_safetensors(
        {"a": torch.ones(2)}, path, adapter_metadata(json.dumps({"peft_type": "LORA"})), digest="blake3"
    )
    dirs = AdapterDirs(tmp_path / "cache", "replica")
    (tmp_path / "cache").mkdir(mode=0o700)
    made = []
    for version in range(1, KEEP_ADAPTERS + 3):
        with open_verified(path, notice_for(path, digest, size, version)) as opened:
            made.append(dirs.unpack(opened, version))
    assert [p.exists() for p in made] == [False, False] + [True] * KEEP_ADAPTERS
    dirs.close()
    assert not any(p.exists() for p in made)


def test_config_sends_an_adapter_as_a_file_at_a_rank_vllm_serves(tiny_model_dir, tmp_path):
    def config(*overrides):
        return load_config(
            base={
                "run": {"dir": str(tmp_path / "run")},
                "model": {"path": str(tiny_model_dir)},
                "data": {"train": "t.jsonl"},
                "algorithm": {"preset": "grpo"},
            },
            overrides=["model.lora.rank=4", *overrides],
        )

    assert config().model.lora.push == "adapter"
    with pytest.raises(ConfigError, match="vLLM loads a LoRA adapter from files"):
        config("learner.weights_transport=collective")
    assert config("learner.weights_transport=collective", "model.lora.push=merged").model.lora.push == "merged"
    with pytest.raises(ConfigError, match="up to rank 512"):
        config("model.lora.rank=600")
    assert [engine_lora_rank(r) for r in (1, 2, 8, 9, 100)] == [1, 8, 8, 16, 128]
    assert transport_name("auto", torch.device("cuda"), adapter=True) == "shm"
    assert transport_name("auto", torch.device("cuda")) == "collective"


class FakeLoraEngine:
    """A FAKE engine: records the adapter directory it is handed and what it held then."""

    def __init__(self):
        self.version, self.loaded = 0, []

    async def load_adapter(self, directory, version: int) -> float:
        self.loaded.append((directory, sorted(os.listdir(directory))))
        self.version = version
        return 0.0


async def test_an_adapter_over_the_object_store_reaches_the_engine_as_a_peft_dir(tiny_model_dir, tmp_path):
    from meshrl.transport.weights.update import WeightsUpdater

    model = trained_adapter(tiny_model_dir)
    source = tmp_path / "pushed.safetensors"  # what the learner put into the bucket
    digest, size = write_safetensors(
        adapter_state_dict(model), source, adapter_metadata(adapter_config_json(model)), digest="sha256"
    )
    fetched = []

    async def fetch(name, dest):  # a FAKE bus fetch: the object's bytes land at dest
        fetched.append(dest)
        dest.write_bytes(source.read_bytes())

    engine, cache = FakeLoraEngine(), tmp_path / "cache"
    cache.mkdir(mode=0o700)
    updater = WeightsUpdater(engine, run_id="r", replica_id="rollout-0", fetch_object=fetch, cache_dir=cache)
    notice = pb.WeightsNotice(
        run_id="r",
        version=1,
        transport="objectstore",
        location="weights-v0000000001",
        sha256=digest,
        size_bytes=size,
        format=ADAPTER_FORMAT,
        step=1,
    )
    report = await updater.apply(notice)
    assert report.ok, report.error
    ((directory, files),) = engine.loaded
    assert engine.version == 1 and files == ["adapter_config.json", "adapter_model.safetensors"]
    assert not fetched[0].exists() and directory.exists()  # the download is gone, the PEFT dir kept for vLLM
    updater.close()
    assert not directory.exists()
