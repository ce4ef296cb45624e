"""A LoRA run's weights push, adapter alone vs merged model, end to end on CPU: what the learner
writes per step and how long the rollout takes to serve it.

Per model (the tiny test model, and SmolLM2-135M-Instruct when it is in ~/.cache/meshrl/models):
- learner side, per push: the merged push (W + (alpha/rank)·B·A folded in, checkpoint names)
  vs the adapter push (PEFT's tensors + config), each through the learner's own
  `WeightsPublisher` (stage, safetensors + BLAKE3 into the shm transport's /dev/shm
  directory); bytes and seconds, the median of `--pushes`;
- rollout side (`--engine`): a vLLM engine without LoRA loads the merged file
  (`WeightsUpdater.apply`: verify + in-place reload), a LoRA engine the adapter (verify +
  unpack + `add_lora`), seconds, the median of `--pushes`; then generated tokens/s of each
  (8 prompts × 4 samples × 32 tokens, after a warm-up), the LoRA engine serving the adapter.

Run:  .venv/bin/python -m benchmarks.lora_push [--engine] [--pushes 3] [--models tiny,smollm2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

SMOLLM2 = Path.home() / ".cache/meshrl/models/SmolLM2-135M-Instruct"
RANK, TARGETS = 16, ["q_proj", "k_proj", "v_proj", "o_proj"]


def lora_model(model_dir: Path):
    from transformers import AutoModelForCausalLM

    from meshrl.config.lora import LoraSettings
    from meshrl.services.learner.lora import apply_lora

    model = apply_lora(
        AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32),
        LoraSettings(rank=RANK, alpha=2 * RANK, target_modules=TARGETS),
    )
    torch.manual_seed(0)
    for name, p in model.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.01)  # as after some steps
    return model


def exporters(model):
    """name → (state dict function, publisher kwargs): what the learner pushes either way."""
    from meshrl.services.learner.build import checkpoint_format
    from meshrl.services.learner.lora import adapter_config_json, adapter_state_dict, merged_state_dict

    tied = bool(model.config.tie_word_embeddings)
    return {
        "merged": (
            lambda: checkpoint_format(model.get_base_model(), merged_state_dict(model)),
            {"tied_embeddings": tied},
        ),
        "adapter": (lambda: adapter_state_dict(model), {"adapter_config": adapter_config_json(model)}),
    }


async def push_once(export, publisher, version: int):
    """(notice, seconds) of one push as the learner does it, the KV announce aside."""
    t0 = time.perf_counter()
    notice, _ = await publisher.deliver(publisher.stage(export()), version, step=version)
    return notice, time.perf_counter() - t0


async def learner_side(model, pushes: int) -> dict:
    from meshrl.services.learner.weights import WeightsPublisher
    from meshrl.transport.weights.send import ShmTransport

    figures, notices = {}, {}
    for kind, (export, kwargs) in exporters(model).items():
        transport = ShmTransport(f"bench-{kind}")
        publisher = WeightsPublisher(None, transport, "bench", **kwargs)
        times = []
        for version in range(1, pushes + 1):
            notice, seconds = await push_once(export, publisher, version)
            times.append(seconds)
        figures[f"{kind}_push_bytes"] = notice.size_bytes
        figures[f"{kind}_push_s"] = round(statistics.median(times), 4)
        notices[kind] = (notice, transport, publisher)
    return figures, notices


async def tokens_per_s(engine) -> float:
    from meshrl.api.common.v1 import common_pb2 as pb

    tasks = [
        pb.PromptTask(
            run_id="bench",
            group_id=f"g{i}",
            prompt_token_ids=torch.arange(10 + i, 26 + i, dtype=torch.int32).numpy().tobytes(),
            sampling=pb.SamplingParams(n=4, temperature=1.0, top_p=1.0, max_tokens=32, seed=i + 1),
        )
        for i in range(8)
    ]
    await engine.generate_group(tasks[0])  # warm-up
    t0 = time.perf_counter()
    groups = await asyncio.gather(*(engine.generate_group(t) for t in tasks))
    tokens = sum(len(s.response_token_ids) // 4 for g in groups for s in g.samples)
    return round(tokens / (time.perf_counter() - t0), 1)


async def rollout_side(model_dir: Path, kind: str, notices: dict, pushes: int) -> dict:
    from meshrl.services.rollout.engine import EngineConfig, RolloutEngine
    from meshrl.transport.weights.update import WeightsUpdater

    notice, transport, publisher = notices[kind]
    engine = await RolloutEngine.start(
        EngineConfig(
            model=str(model_dir),
            max_model_len=256,
            kv_cache_gb=0.5,
            replica_id=f"bench-{kind}",
            max_lora_rank=RANK if kind == "adapter" else 0,
        )
    )
    try:
        with tempfile.TemporaryDirectory(dir="/dev/shm") as cache:
            updater = WeightsUpdater(engine, run_id="bench", replica_id=f"bench-{kind}", cache_dir=cache)
            times = []
            for version in range(pushes + 1, 2 * pushes + 1):  # versions the engine never held
                fresh = type(notice)()
                fresh.CopyFrom(notice)
                fresh.version = version
                report = await updater.apply(fresh)
                assert report.ok, report.error
                times.append(report.load_s)
            figures = {
                f"{kind}_load_s": round(statistics.median(times), 4),
                f"{kind}_tokens_per_s": await tokens_per_s(engine),
            }
            updater.close()
    finally:
        engine.shutdown()
    return figures


async def measure(name: str, model_dir: Path, pushes: int, engine: bool) -> dict:
    figures, notices = await learner_side(lora_model(model_dir), pushes)
    if engine:
        for kind in ("merged", "adapter"):
            figures.update(await rollout_side(model_dir, kind, notices, pushes))
    for _, transport, _ in notices.values():
        transport.close()
    return {"model": name, "rank": RANK, "targets": TARGETS, **figures}


def model_dirs(names: list[str], tmp: Path) -> dict[str, Path]:
    from meshrl.inputs.models.tiny import build_tiny_model_dir

    dirs = {}
    if "tiny" in names:
        dirs["tiny"] = build_tiny_model_dir(tmp / "tiny")
    if "smollm2" in names and SMOLLM2.is_dir():
        dirs["smollm2"] = SMOLLM2
    return dirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pushes", type=int, default=3)
    parser.add_argument("--models", default="tiny,smollm2")
    parser.add_argument("--engine", action="store_true", help="also time the rollout's load and generation")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, model_dir in model_dirs(args.models.split(","), Path(tmp)).items():
            print(json.dumps(asyncio.run(measure(name, model_dir, args.pushes, args.engine))), flush=True)


if __name__ == "__main__":
    main()
