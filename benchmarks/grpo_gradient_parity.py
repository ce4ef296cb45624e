"""Does the learner compute the GRPO gradient a plain computation does, on SmolLM2's own answers?

    .venv/bin/python -m benchmarks.grpo_gradient_parity [--seed 0] [--prompts 8] [--samples 8]

Samples `--samples` answers (≤ 16 tokens, T = 1, HF generate) to each of the main job's first
`--prompts` training sums with SmolLM2-135M-Instruct (`meshrl models fetch-smollm2`), scores
them with the main job's judge (services/reward/verify_worker.py, math-verify), then computes
the gradient of one GRPO step two ways from the same weights:
- meshrl's `TrainStep` (left-padded prompts, right-padded answers, micro-batches of 16, one
  mini-batch, group-normalised advantages, seq-mean-token-mean, clipped ratio at π_old = π);
- one unpadded forward per answer and the loss as written: −(1/N) Σ_i A_i · mean_t ratio.
Prints the cosine and norms of the two gradients and the largest relative difference of a
tensor. tests/unit/services/learner/train/test_grpo_gradient.py holds the same on a tiny model.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from benchmarks.vs_trl import ensure_model
from meshrl.algos.batch import RolloutBatch
from meshrl.config.algorithm import AlgorithmConfig, TrainerConfig
from meshrl.services.learner.train.policy import build_policy
from meshrl.services.learner.train.step import TrainStep

REPO = Path(__file__).resolve().parents[1]
EOS = 2  # SmolLM2's <|im_end|>


def judge():
    spec = importlib.util.spec_from_file_location("verify_worker", REPO / "services" / "reward" / "verify_worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.verify_answer


def sample(model, tok, rows: list[dict], samples: int) -> tuple[list, list, list]:
    """(prompt ids, answer ids up to and with EOS, rewards) per answer, groups in order."""
    verify, prompts, answers, rewards = judge(), [], [], []
    for row in rows:
        text = tok.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
        ids = tok(text, add_special_tokens=False, return_tensors="pt").input_ids
        out = model.generate(
            ids.repeat(samples, 1), do_sample=True, temperature=1.0, top_k=0, max_new_tokens=16, pad_token_id=EOS
        )
        for answer in out[:, ids.shape[1] :].tolist():
            answer = answer[: answer.index(EOS) + 1] if EOS in answer else answer
            truth = row["reward_model"]["ground_truth"]
            prompts.append(ids[0].tolist())
            answers.append(answer)
            rewards.append(float(verify(tok.decode(answer, skip_special_tokens=True), truth)[0]))
    return prompts, answers, rewards


def step_gradient(model, batch: RolloutBatch, micro_batch_size: int = 16) -> dict[str, torch.Tensor]:
    """The gradient `TrainStep` has accumulated when it clips (before the optimizer moves anything):
    GRPO, one mini-batch, seq-mean-token-mean, no KL."""
    trainer = TrainerConfig(micro_batch_size=micro_batch_size, mini_batches=1, optim={"lr": 2e-5})
    algo = AlgorithmConfig(advantage_estimator="grpo", policy_loss="ppo", loss_agg_mode="seq-mean-token-mean")
    policy = build_policy(model, trainer, total_steps=1)
    grads, clip = {}, policy.clip_gradients

    def captured(name, step=None):
        grads.update({n: p.grad.detach().clone() for n, p in policy.model.named_parameters() if p.grad is not None})
        return clip(name, step)

    policy.clip_gradients = captured
    TrainStep(policy, algo.model_copy(update={"kl_coef": 0.0}), trainer, max_staleness=0)(batch, 0)
    return grads


def plain_gradient(model, prompts, answers, rewards, samples: int) -> dict[str, torch.Tensor]:
    r = torch.tensor(rewards).view(-1, samples)
    advantages = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-6)).view(-1)
    for prompt, answer, a in zip(prompts, answers, advantages):
        logits = model(input_ids=torch.tensor([prompt + answer])).logits[0, len(prompt) - 1 : -1].float()
        logprobs = torch.log_softmax(logits, -1).gather(-1, torch.tensor(answer)[:, None])[:, 0]
        (-(a * torch.exp(logprobs - logprobs.detach())).mean() / len(prompts)).backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}


def compare(ours: dict, theirs: dict) -> str:
    dot = sum((ours[n] * theirs[n]).sum() for n in theirs)
    norm_a = sum(ours[n].pow(2).sum() for n in theirs).sqrt()
    norm_b = sum(theirs[n].pow(2).sum() for n in theirs).sqrt()
    worst = max(((ours[n] - theirs[n]).norm() / theirs[n].norm().clamp_min(1e-12)).item() for n in theirs)
    return f"cosine {dot / (norm_a * norm_b):.6f}  norms {norm_a:.4f} (meshrl) {norm_b:.4f} (plain)  largest relative difference {worst:.1e}"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--samples", type=int, default=8)
    args = ap.parse_args(argv)
    model_dir, data = ensure_model(), Path("/tmp/meshrl-parity/arith_train.jsonl")
    data.parent.mkdir(parents=True, exist_ok=True)
    meshrl = Path(sys.executable).with_name("meshrl")
    subprocess.run([str(meshrl), "data", "arithmetic", "--out", str(data), "--n", "64", "--digits", "1"], check=True)
    rows = [json.loads(line) for line in data.read_text().splitlines()][: args.prompts]
    tok, model = AutoTokenizer.from_pretrained(model_dir), AutoModelForCausalLM.from_pretrained(model_dir)
    torch.manual_seed(args.seed)
    prompts, answers, rewards = sample(model, tok, rows, args.samples)
    print(f"{len(answers)} answers, reward mean {sum(rewards) / len(rewards):.3f}")
    batch = RolloutBatch.from_sequences(
        [np.asarray(p) for p in prompts],
        [np.asarray(a) for a in answers],
        rewards=rewards,
        group_ids=[i // args.samples for i in range(len(answers))],
        pad_id=EOS,
    )
    ours = step_gradient(copy.deepcopy(model), batch)
    print(compare(ours, plain_gradient(copy.deepcopy(model), prompts, answers, rewards, args.samples)))


if __name__ == "__main__":
    main()
