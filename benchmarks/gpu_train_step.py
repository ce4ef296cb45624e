"""The learner's training step against a plain Hugging Face step on one GPU (issue 21): step
time, the ratio to the floor, MFU, peak memory, each lever on its own, and the weights
export's times — also, with `--tiny`, on CPU in seconds (what CI runs).

Model (`--shape`): `qwen2.5-1.5b` (Qwen2: hidden 1,536, 28 layers, 12 query / 2 KV heads,
intermediate 8,960, vocabulary 151,936, tied embeddings; the default), `smollm2-135m`, or
`tiny`. Random weights: timing only, nothing downloaded.
Batch (`--batch`): `issue` = GRPO 16 groups × 8 samples, a 256-token prompt per group,
responses 35–768 tokens (seeded uniform), ≈ 81.5k real tokens; `small` = 2 × 8, 64-token
prompts, 16–64-token responses; `tiny` = 2 × 4, 16 + 4–24. Micro-batch 16 (`--micro`), bf16
autocast over fp32 master weights and AdamW state (`--precision`).

Variants, each timed over `--steps` steps after `--warmup` (median; the model is rebuilt
for each, so one variant's state never reaches the next):
  floor          plain HF: forward with labels (its own loss over the response tokens),
                 backward, clip_grad_norm_, torch.optim.AdamW (fused on CUDA), same rows,
                 same micro-batches, same precision
  floor_bf16     the same with the whole model in bf16 (no fp32 masters)
  meshrl         TrainStep, GRPO (ppo clip, no KL, no entropy bonus), defaults
  levers, each alone on top of `meshrl`:
  old_chunk      trainer.lm_head_chunk = 4,194,304 (the constant before issue 21)
  liger          trainer.lm_head = liger (skipped, with the reason, where it cannot run)
  adamw_unfused  trainer.optim.fused = off
  packed         trainer.forward = packed (attention auto = varlen: no N×N mask)
  packed_sdpa    trainer.forward = packed, attention = sdpa (the dense mask)
  shared_prefix  trainer.forward = shared_prefix
  compile        trainer.compile = true (each decoder layer)
  checkpointing  trainer.gradient_checkpointing = true
Per variant: step seconds, ratio to the floor, MFU, peak device memory (CUDA), the step's
split. MFU = useful FLOPs ÷ step time ÷ the device's peak (`--peak-tflops`, else a table by
device name: H200/H100 989 bf16 dense, A100 312, ...). Useful FLOPs are the same for every
variant: 6 × decoder-layer matmul parameters × all real tokens + 6 × LM-head parameters ×
response tokens + 6 × layers × hidden × Σ sequence length² (causal attention, fwd + bwd).

Export (`--export`, on by default): the weights in bf16 as a shm push writes them —
foreground (cast + host copy + digest + write on the trainer thread, sha256 and blake3),
background (what the trainer thread waits for: the staging copy; then the export thread's
write + digest), and the collective transport's on-device snapshot. `--push-steps N` also
times N training steps each followed by no push / a foreground push / a background push.

Run on a GPU host with only torch and transformers (no vLLM, no network): see
docs/benchmarks.md, "The learner on a GPU". Here:

    .venv/bin/python -m benchmarks.gpu_train_step --tiny                  # CPU, ~1 min (CI: a subset)
    .venv/bin/python -m benchmarks.gpu_train_step --shape smollm2-135m --batch small \\
        --variants meshrl --push-steps 3                                  # CPU, step ± push
    python -m benchmarks.gpu_train_step --json gpu.json                   # a GPU: everything
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

SHAPES = {
    "qwen2.5-1.5b": dict(
        hidden_size=1536,
        intermediate_size=8960,
        num_hidden_layers=28,
        num_attention_heads=12,
        num_key_value_heads=2,
        vocab_size=151936,
        rope_theta=1e6,
        max_position_embeddings=32768,
    ),
    "smollm2-135m": dict(
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        vocab_size=49152,
        rope_theta=1e5,
        max_position_embeddings=2048,
    ),
    "tiny": dict(
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=512,
        rope_theta=1e4,
        max_position_embeddings=256,
    ),
}
BATCHES = {  # groups, samples per group, prompt tokens, (shortest, longest) response
    "issue": (16, 8, 256, (35, 768)),
    "small": (2, 8, 64, (16, 64)),
    "tiny": (2, 4, 16, (4, 24)),
}
PEAK_TFLOPS = {
    "H200": 989.4,
    "H100": 989.4,
    "H800": 989.4,
    "A100": 312.0,
    "A800": 312.0,
    "L40S": 362.1,
    "L4": 121.0,
    "A10": 125.0,
    "4090": 165.2,
}
LEVERS = {
    "meshrl": {},
    "old_chunk": {"lm_head_chunk": 1 << 22},
    "liger": {"lm_head": "liger"},
    "adamw_unfused": {"optim": {"fused": "off"}},
    "packed": {"forward": "packed"},
    "packed_sdpa": {"forward": "packed", "attention": "sdpa"},
    "shared_prefix": {"forward": "shared_prefix"},
    "compile": {"compile": True},
    "checkpointing": {"gradient_checkpointing": True},
}
VARIANTS = ("floor", "floor_bf16", *LEVERS)


# ---- model, batch, FLOPs -------------------------------------------------------------
def build_model(shape: str, device: torch.device, dtype=torch.float32):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(**SHAPES[shape], tie_word_embeddings=True, pad_token_id=0)
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM(config).to(dtype)
    if device.type == "cuda":
        model.set_attn_implementation("sdpa")
    return model


def build_batch(kind: str, vocab: int):
    """A GRPO batch: each group's rows share a prompt; ragged responses (seeded)."""
    from meshrl.algos.batch import RolloutBatch

    groups, size, prompt_len, (low, high) = BATCHES[kind]
    rng = np.random.default_rng(0)
    prompts = [p for p in (rng.integers(1, vocab, prompt_len) for _ in range(groups)) for _ in range(size)]
    responses = [rng.integers(1, vocab, rng.integers(low, high + 1)) for _ in range(groups * size)]
    behaviour = [-5.0 - rng.random(len(r)) for r in responses]
    return RolloutBatch.from_sequences(
        prompts,
        responses,
        rewards=rng.random(groups * size),
        group_ids=np.arange(groups * size) // size,
        pad_id=0,
        behaviour_logprobs=behaviour,
    )


def useful_flops(shape: str, batch) -> float:
    """The module docstring's useful FLOPs of one step on `batch`."""
    s = SHAPES[shape]
    h, layers, vocab = s["hidden_size"], s["num_hidden_layers"], s["vocab_size"]
    kv = h // s["num_attention_heads"] * s["num_key_value_heads"]
    per_layer = 2 * h * h + 2 * h * kv + 3 * h * s["intermediate_size"]
    lengths = (batch.prompt_mask.sum(1) + batch.response_mask.sum(1)).double()
    tokens, responses = float(lengths.sum()), float(batch.response_mask.sum())
    return 6 * per_layer * layers * tokens + 6 * vocab * h * responses + 6 * layers * h * float((lengths**2).sum())


def peak_flops(device: torch.device, given: float | None) -> float | None:
    if given:
        return given * 1e12
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    return next((t * 1e12 for key, t in PEAK_TFLOPS.items() if key in name), None)


# ---- timing --------------------------------------------------------------------------
def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class Result:
    variant: str
    seconds: float | None = None
    peak_gb: float | None = None
    split: dict | None = None
    skipped: str | None = None


def timed(run_step, device: torch.device, warmup: int, steps: int) -> tuple[float, dict]:
    """(median seconds of `steps` calls after `warmup`, the last call's metrics split)."""
    for _ in range(warmup):
        run_step()
    times, metrics = [], {}
    for _ in range(steps):
        sync(device)
        start = time.perf_counter()
        metrics = run_step() or {}
        sync(device)
        times.append(time.perf_counter() - start)
    split = {
        k.removeprefix("time/"): round(v, 4) for k, v in metrics.items() if k.startswith("time/") and k != "time/step"
    }
    return statistics.median(times), split


def micro_batches(batch, size: int):
    """(input_ids, attention_mask, labels, response tokens) per micro-batch: prompt + response
    right-padded, labels only on response tokens (the floor's own loss)."""
    out = []
    for micro in batch.split(size):
        ids, mask = micro.input_ids(), micro.attention_mask()
        labels = torch.full_like(ids, -100)
        p = micro.prompt_ids.shape[1]
        labels[:, p:] = torch.where(micro.response_mask > 0, micro.response_ids, -100)
        out.append((ids, mask, labels, micro.response_mask.sum()))
    return out


def floor_step(model, optimizer, micros, total: float, autocast: bool, device: torch.device):
    """One plain HF step: Σ over micro-batches of (token-mean CE × their share), clip, AdamW."""
    for ids, mask, labels, tokens in micros:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels, use_cache=False).loss
        (loss * (tokens / total)).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def run_floor(args, device, batch, pure_bf16: bool) -> Result:
    model = build_model(args.shape, device, torch.bfloat16 if pure_bf16 else torch.float32)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=device.type == "cuda" or None)
    micros = [tuple(t.to(device) if torch.is_tensor(t) else t for t in m) for m in micro_batches(batch, args.micro)]
    total = float(batch.response_mask.sum())
    autocast = args.precision == "bf16" and not pure_bf16
    seconds, _ = timed(
        lambda: floor_step(model, optimizer, micros, total, autocast, device), device, args.warmup, args.steps
    )
    return Result("floor_bf16" if pure_bf16 else "floor", seconds)


def trainer_config(args, lever: dict):
    from meshrl.config.algorithm import TrainerConfig

    base = {"micro_batch_size": args.micro, "precision": args.precision, "optim": {"lr": 1e-6, "max_grad_norm": 1.0}}
    optim = {**base["optim"], **lever.get("optim", {})}
    return TrainerConfig(**{**base, **lever, "optim": optim})


def train_step_for(args, device, lever: dict):
    from meshrl.config.algorithm import AlgorithmConfig
    from meshrl.services.learner.train.fsdp import DistContext
    from meshrl.services.learner.train.policy import build_policy
    from meshrl.services.learner.train.step import TrainStep

    trainer = trainer_config(args, lever)
    policy = build_policy(
        build_model(args.shape, device),
        trainer,
        total_steps=1000,
        dist=DistContext(device=device),
        bf16=args.precision == "bf16",
    )
    algo = AlgorithmConfig(advantage_estimator="grpo", policy_loss="ppo", kl_coef=0.0, entropy_coeff=0.0)
    return TrainStep(policy, algo, trainer, dist=DistContext(device=device), max_staleness=0)


def run_lever(args, device, batch, name: str) -> Result:
    if name == "compile":
        torch._dynamo.reset()
    try:
        step = train_step_for(args, device, LEVERS[name])
    except ValueError as err:  # a lever that cannot run here says why (liger on CPU, ...)
        return Result(name, skipped=str(err))
    counter = iter(range(10**6))
    seconds, split = timed(lambda: step(batch, next(counter)), device, args.warmup, args.steps)
    return Result(name, seconds, split=split)


def run_variant(args, device, batch, name: str) -> Result:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    if name in ("floor", "floor_bf16"):
        result = run_floor(args, device, batch, pure_bf16=name == "floor_bf16")
    else:
        result = run_lever(args, device, batch, name)
    if device.type == "cuda" and result.skipped is None:
        result.peak_gb = torch.cuda.max_memory_allocated(device) / 1e9
    return result


# ---- the weights export ----------------------------------------------------------------
class MemoryKV:
    """The run KV for the benchmark's publisher: puts kept in memory (no NATS here)."""

    async def put(self, key, value):
        return None


def bf16_tensors(model) -> dict[str, torch.Tensor]:
    """What a push sends: the state dict, the tied LM head once (as rollout_tensors does)."""
    return {n: t.detach() for n, t in model.state_dict().items() if not n.endswith("lm_head.weight")}


def blake3_installed() -> bool:
    try:
        import blake3  # noqa: F401  (a GPU host may have only torch and transformers)
    except ImportError:
        return False
    return True


def export_times(args, device) -> dict[str, float]:
    """Seconds: foreground write (sha256 / blake3), background (stage; then write), the
    collective's on-device snapshot; and the file's GB."""
    from meshrl.services.learner.weights_staging import HostStaging
    from meshrl.transport.weights.file import write_safetensors

    model = build_model(args.shape, device)
    tensors, out = bf16_tensors(model), {}
    digests = ("sha256", "blake3") if blake3_installed() else ("sha256",)
    with tempfile.TemporaryDirectory(dir=args.shm) as tmp:
        for digest in digests:
            start = time.perf_counter()
            cast = {n: t.to(torch.bfloat16) for n, t in tensors.items()}
            _, size = write_safetensors(cast, Path(tmp) / f"fg-{digest}", digest=digest)
            out[f"foreground_{digest}_s"] = time.perf_counter() - start
            del cast
        staging = HostStaging()
        staging.stage(tensors, torch.bfloat16).wait()  # the buffers exist after the first push
        start = time.perf_counter()
        staged = staging.stage(tensors, torch.bfloat16)
        out["background_stage_s"] = time.perf_counter() - start  # what the trainer thread waits
        staged.wait()
        out["background_copy_s"] = time.perf_counter() - start
        start = time.perf_counter()
        write_safetensors(staged.tensors, Path(tmp) / "bg", digest=digests[-1])
        out[f"background_write_{digests[-1]}_s"] = time.perf_counter() - start
    sync(device)
    start = time.perf_counter()  # the collective transport's snapshot (collective.py): on-device copies
    {n: t.detach().to(device=device, dtype=torch.bfloat16, copy=True) for n, t in tensors.items()}
    sync(device)
    out["collective_snapshot_s"] = time.perf_counter() - start
    out["file_gb"] = size / 1e9
    return out


def push_step_times(args, device, batch) -> dict[str, float]:
    """Median seconds of a training step followed by no push, a foreground push (all on the
    trainer thread) or a background push (the next step trains while it is written)."""
    import asyncio
    from types import SimpleNamespace

    from meshrl.services.learner.weights import WeightsPublisher
    from meshrl.transport.weights import ShmTransport

    step = train_step_for(args, device, {})
    out = {}
    for mode in ("none", "foreground", "background"):
        transport = ShmTransport("bench", root=args.shm)
        publisher = WeightsPublisher(
            SimpleNamespace(state=MemoryKV()),
            transport,
            "bench",
            tied_embeddings=True,
            dtype=torch.bfloat16,
            background=mode == "background",
        )
        versions = iter(range(1, 10**6))

        async def one_step(mode=mode, publisher=publisher, versions=versions):  # this iteration's
            step(batch, 0)
            if mode != "none":
                state = {n: t.detach() for n, t in step.policy.model.state_dict().items()}
                await publisher.publish(state, version=next(versions), step=0)

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            seconds, _ = timed(lambda loop=loop: loop.run_until_complete(one_step()), device, 1, args.push_steps)
            loop.run_until_complete(publisher.drain())
        finally:
            loop.close()
            transport.close()
        out[f"step_push_{mode}_s"] = seconds
    return out


# ---- report --------------------------------------------------------------------------
def report(results: list[Result], flops: float, peak: float | None) -> list[dict]:
    floor = next((r.seconds for r in results if r.variant == "floor" and r.seconds), None)
    rows = []
    for r in results:
        row = {"variant": r.variant, "seconds": r.seconds, "peak_gb": r.peak_gb, "split": r.split, "skipped": r.skipped}
        if r.seconds:
            row["vs_floor"] = r.seconds / floor if floor else None
            row["mfu"] = flops / r.seconds / peak if peak else None
        rows.append(row)
        print(format_row(row))
    return rows


def format_row(row: dict) -> str:
    if row["skipped"]:
        return f"  {row['variant']:14s} skipped: {row['skipped']}"
    parts = [f"  {row['variant']:14s} {row['seconds']:8.3f} s"]
    if row.get("vs_floor"):
        parts.append(f"{row['vs_floor']:5.2f}x floor")
    parts.append(f"MFU {row['mfu'] * 100:5.1f} %" if row.get("mfu") else "MFU n/a")
    parts.append(f"peak {row['peak_gb']:6.1f} GB" if row["peak_gb"] else "peak n/a")
    if row["split"]:
        parts.append(" ".join(f"{k} {v:.3f}" for k, v in sorted(row["split"].items())))
    return "  ".join(parts)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiny", action="store_true", help="tiny shape and batch, 1 step: CPU, seconds")
    parser.add_argument("--shape", choices=SHAPES, default="qwen2.5-1.5b")
    parser.add_argument("--batch", choices=BATCHES, default="issue")
    parser.add_argument("--micro", type=int, default=16)
    parser.add_argument("--precision", choices=("bf16", "fp32"), default="bf16")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument(
        "--push-steps",
        type=int,
        default=None,
        help="also time steps with no / foreground / background push (--tiny: 1)",
    )
    parser.add_argument("--no-export", dest="export", action="store_false")
    parser.add_argument("--peak-tflops", type=float, default=None)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--shm", default="/dev/shm" if Path("/dev/shm").is_dir() else None)
    parser.add_argument("--json", default=None, help="write every figure to this file")
    args = parser.parse_args(argv)
    if args.tiny:
        args.shape, args.batch, args.steps, args.warmup = "tiny", "tiny", 1, 0
        args.push_steps = 1 if args.push_steps is None else args.push_steps
        if args.variants == ",".join(VARIANTS):  # inductor's C++ build alone takes minutes on CPU
            args.variants = ",".join(v for v in VARIANTS if v != "compile")
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        parser.error(f"--variants: unknown {sorted(unknown)}; choose from {', '.join(VARIANTS)}")
    return args


def main(argv=None) -> dict:
    args = parse(argv)
    device = torch.device(args.device)
    batch = build_batch(args.batch, SHAPES[args.shape]["vocab_size"])
    flops, peak = useful_flops(args.shape, batch), peak_flops(device, args.peak_tflops)
    tokens = int(batch.prompt_mask.sum() + batch.response_mask.sum())
    print(
        f"{args.shape} on {device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}), "
        f"{args.batch} batch: {batch.batch_size} rows, {tokens:,} real tokens "
        f"({int(batch.response_mask.sum()):,} response), micro-batch {args.micro}, {args.precision}; "
        f"{flops / 1e9:,.3g} GFLOP useful per step; device peak "
        f"{f'{peak / 1e12:.0f} TFLOP/s' if peak else 'n/a (--peak-tflops)'}"
    )
    results = [run_variant(args, device, batch, name) for name in args.variants.split(",")]
    out = {"args": vars(args), "tokens": tokens, "useful_tflop": flops / 1e12, "variants": report(results, flops, peak)}
    if args.export:
        try:
            out["export"] = export_times(args, device)
            print("  export: " + "  ".join(f"{k} {v:.3f}" for k, v in out["export"].items()))
        except ImportError as err:  # meshrl.transport.weights imports the notice's protobuf
            print(f"  export: skipped, {err} (pip install protobuf)")
    if args.push_steps:
        try:
            out["push"] = push_step_times(args, device, batch)
            print("  step + push: " + "  ".join(f"{k} {v:.3f}" for k, v in out["push"].items()))
        except ImportError as err:  # the publisher's notice is a protobuf message
            print(f"  step + push: skipped, {err} (pip install protobuf)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
