"""Time a weights push into a running vLLM engine for SmolLM2-135M-sized weights (≈538 MB fp32).

Builds random weights from a LlamaConfig with SmolLM2-135M's dims (tied embeddings, 30
layers, hidden 576), starts one `RolloutEngine` on them and an EmbeddedNats, then times:

  disk copy     writing the same safetensors bytes to a file on local disk (the baseline)
  shm write     the bytes → a /dev/shm file (what the shm transport costs at best)
  learner push  the learner's whole side of a push (WeightsPublisher on shm): safetensors
                written straight from the tensors with the sha256 on the way, rename, notice
  shm apply     the replica's side: sha256 + size check, in-place reload, prefix-cache reset
  reload only   `RolloutEngine.load_weights` alone (pause, reload in place, resume)
  obj put       the learner's side of the object-store transport (WeightsStore.put_file)
  obj apply     the replica's side: get_file to /dev/shm (verified) + sha256 check + reload

and prints MB/s for each. The in-place reload is what DESIGN.md measured at ≈0.8 s.

    .venv/bin/python benchmarks/weights_push.py [--layers 30] [--keep-dir DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import tempfile
import time
from pathlib import Path

SMOLLM2_135M = dict(
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    head_dim=64,
    vocab_size=49152,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    rope_theta=100000.0,
    tie_word_embeddings=True,
)


def build_model_dir(out: Path, layers: int) -> Path:
    """Random-init SmolLM2-shaped Llama (fp32 safetensors) + the tiny char tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from meshrl.inputs.models.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    config = LlamaConfig(
        **{**SMOLLM2_135M, "num_hidden_layers": layers},
        dtype="float32",
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).to(torch.float32).save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    return out


def perturbed_bytes(model_dir: Path) -> bytes:
    """The checkpoint with every tensor nudged (a real update), as safetensors bytes."""
    import torch
    from safetensors.torch import load_file, save

    state = load_file(str(model_dir / "model.safetensors"))
    return save({k: v + 0.01 * torch.randn_like(v) for k, v in state.items()}, metadata={"format": "pt"})


def timed_write(path: Path, data: bytes) -> float:
    began = time.perf_counter()
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return time.perf_counter() - began


def line(name: str, size: int, seconds: float) -> str:
    return f"{name:<12} {size / seconds / 1e6:8.0f} MB/s  ({seconds:6.2f} s for {size / 1e6:.0f} MB)"


def notice(version: int, transport: str, location: str, data: bytes):
    from meshrl.api.common.v1 import common_pb2 as pb

    return pb.WeightsNotice(
        run_id="bench",
        version=version,
        transport=transport,
        location=location,
        sha256=hashlib.sha256(data).hexdigest(),
        size_bytes=len(data),
        format="safetensors",
    )


async def learner_push(bus, data: bytes) -> float:
    """Seconds for `WeightsPublisher.publish` of the tensors in `data` over shm."""
    from safetensors.torch import load

    from meshrl.services.learner.weights import WeightsPublisher
    from meshrl.transport.weights import ShmTransport

    tensors = load(data)
    transport = ShmTransport(f"bench-{os.getpid()}")
    publisher = WeightsPublisher(bus, transport, "bench")
    try:
        figures = await publisher.publish(tensors, version=1, step=0)
    finally:
        for leftover in transport.dir.glob("*"):
            leftover.unlink()
        transport.dir.rmdir()
    return figures["time/weights_serialise"] + figures["time/weights_push"]


async def measure(model_dir: Path, work: Path, nats_url: str) -> list[str]:
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine
    from meshrl.transport.bus import Bus
    from meshrl.transport.weights.update import WeightsUpdater

    data = perturbed_bytes(model_dir)
    size, out = len(data), []
    out.append(line("disk copy", size, timed_write(work / "copy.safetensors", data)))
    engine = await RolloutEngine.start(EngineConfig(model=str(model_dir), kv_cache_gb=0.5, max_model_len=512))
    bus = await Bus.connect(nats_url, "bench", name="bench")
    try:
        await bus.ensure_streams()
        updater = WeightsUpdater(engine, run_id="bench", replica_id="bench", fetch_object=bus.weights.fetch_verified)
        shm = Path("/dev/shm") / f"meshrl-bench-{os.getpid()}.safetensors"
        out.append(line("shm write", size, timed_write(shm, data)))
        report = await updater.apply(notice(1, "shm", str(shm), data))
        assert report.ok, report.error
        out.append(line("shm apply", size, report.load_s))
        out.append(line("reload only", size, await engine.load_weights(shm, 3)))
        shm.unlink()
        out.append(line("learner push", size, await learner_push(bus, data)))
        began = time.perf_counter()
        await bus.weights.put_file("weights-v2", work / "copy.safetensors")
        out.append(line("obj put", size, time.perf_counter() - began))
        report = await updater.apply(notice(4, "objectstore", "weights-v2", data))
        assert report.ok, report.error
        out.append(line("obj apply", size, report.load_s))
    finally:
        await bus.close()
        engine.shutdown()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=30, help="30 = SmolLM2-135M (538 MB fp32)")
    ap.add_argument("--keep-dir", type=Path, default=None, help="build the model here and keep it")
    args = ap.parse_args()
    from meshrl.transport.bus import EmbeddedNats

    with tempfile.TemporaryDirectory(dir=Path.home()) as tmp:  # on local disk, not tmpfs
        work = Path(tmp)
        model_dir = build_model_dir(args.keep_dir or work / "model", args.layers)
        with EmbeddedNats(work / "nats") as server:
            for text in asyncio.run(measure(model_dir, work, server.url)):
                print(text, flush=True)


if __name__ == "__main__":
    main()
