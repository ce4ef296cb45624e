"""`meshrl plan`'s learner estimate against the peak memory a real training step takes on CPU.

For each case, a fresh process builds a Llama-shaped model from a config (random weights),
the learner's own `TrainStep` (GRPO, fp32, AdamW) and a batch of exactly
trainer.micro_batch_size rows × (data.max_prompt_tokens + rollout.sampling.max_tokens)
tokens, and runs two steps (the second holds AdamW's state from its start: the steady peak). Measured: peak RSS (VmHWM) minus the RSS just before the model
was built, i.e. weights + gradients + optimizer state + activations + logits + allocator
slack; the estimate is `meshrl.plan.memory.learner_memory` for the same config.

Simplifications: CPU only, one process (no FSDP), glibc's allocator keeps freed pages, so
the measured peak is an upper bound of what the tensors held.

Run:  .venv/bin/python benchmarks/plan_memory.py [--cases small,smollm2]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import tempfile

import psutil

CASES = {
    "small": dict(
        model=dict(
            vocab_size=8192,
            hidden_size=256,
            intermediate_size=688,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            tie_word_embeddings=True,
        ),
        rows=8,
        prompt=64,
        response=64,
    ),
    "small_ckpt": dict(
        model=dict(
            vocab_size=8192,
            hidden_size=256,
            intermediate_size=688,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            tie_word_embeddings=True,
        ),
        rows=8,
        prompt=64,
        response=64,
        checkpointing=True,
    ),
    "smollm2": dict(
        model=dict(
            vocab_size=49152,
            hidden_size=576,
            intermediate_size=1536,
            num_hidden_layers=30,
            num_attention_heads=9,
            num_key_value_heads=3,
            tie_word_embeddings=True,
        ),
        rows=4,
        prompt=64,
        response=64,
    ),
}


def run_config(case: dict, model_dir: str):
    from meshrl.config import load_config

    return load_config(
        base={
            "model": {"path": model_dir},
            "data": {"train": "unused.jsonl", "max_prompt_tokens": case["prompt"]},
            "algorithm": {"preset": "grpo", "kl_coef": 0.0},
            "rollout": {"sampling": {"group_size": case["rows"], "max_tokens": case["response"]}},
            "learner": {"prompts_per_step": 1},
            "trainer": {
                "micro_batch_size": case["rows"],
                "precision": "fp32",
                "gradient_checkpointing": case.get("checkpointing", False),
            },
        }
    )


def synthetic_batch(rows: int, prompt: int, response: int, vocab: int):
    import torch

    from meshrl.algos.batch import RolloutBatch

    g = torch.Generator().manual_seed(0)
    prompts, responses = (
        torch.randint(1, vocab, (rows, prompt), generator=g),
        torch.randint(1, vocab, (rows, response), generator=g),
    )
    return RolloutBatch(
        prompt_ids=prompts,
        prompt_mask=torch.ones_like(prompts),
        response_ids=responses,
        response_mask=torch.ones(rows, response),
        rewards=torch.rand(rows, generator=g),
        group_ids=torch.zeros(rows, dtype=torch.long),
        behaviour_logprobs=-10.0 - torch.rand(rows, response, generator=g),
    )


def _measure(case: dict, model_dir: str, out) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from meshrl.services.learner.train.policy import build_policy
    from meshrl.services.learner.train.step import TrainStep

    cfg = run_config(case, model_dir)
    batch = synthetic_batch(case["rows"], case["prompt"], case["response"], case["model"]["vocab_size"])
    before = psutil.Process().memory_info().rss
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model_dir))
    policy = build_policy(model, cfg.trainer, total_steps=10)
    step = TrainStep(policy, cfg.algorithm, cfg.trainer, max_staleness=0)
    step(batch, 0)
    step(batch, 1)  # the second step runs with the optimizer state allocated: the steady peak
    out.put(peak_rss() - before)


def peak_rss() -> int:
    """This process's peak RSS in bytes: VmHWM, the high-water mark of its own address space.
    Not ru_maxrss: Linux carries the parent's peak across fork + exec, so a child spawned by
    a large parent (a pytest process holding a vLLM engine: 2.6 GB) reported that instead."""
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/self/status has no VmHWM line (Linux only)")


def measure_case(case: dict) -> dict:
    """{'estimate': bytes, 'measured': bytes, 'items': {...}} for one case (a fresh process measures)."""
    from transformers import LlamaConfig

    from meshrl.plan.memory import learner_memory
    from meshrl.plan.shapes import hf_config, model_shape

    with tempfile.TemporaryDirectory() as model_dir:
        LlamaConfig(**case["model"], pad_token_id=0).save_pretrained(model_dir)
        estimate = learner_memory(run_config(case, model_dir), model_shape(hf_config(model_dir)))
        queue = mp.get_context("spawn").Queue()
        proc = mp.get_context("spawn").Process(target=_measure, args=(case, model_dir, queue))
        proc.start()
        measured = queue.get(timeout=1800)
        proc.join()
    # the measured process trains a step and never pushes: leave the push copy out of its estimate
    items = {k: v for k, v in estimate.items.items() if not k.startswith("weights-push copy")}
    return {"estimate": sum(items.values()), "measured": measured, "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="small,small_ckpt,smollm2")
    for name in parser.parse_args().cases.split(","):
        result = measure_case(CASES[name])
        mib = {k: round(v / 2**20, 1) for k, v in result["items"].items()}
        print(
            json.dumps(
                {
                    "case": name,
                    "estimate_mib": round(result["estimate"] / 2**20, 1),
                    "measured_peak_mib": round(result["measured"] / 2**20, 1),
                    "ratio": round(result["measured"] / result["estimate"], 3),
                    "items_mib": mib,
                }
            )
        )


if __name__ == "__main__":
    main()
