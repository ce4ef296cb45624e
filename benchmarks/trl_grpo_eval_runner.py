"""TRL's side of benchmarks/time_to_accuracy.py: GRPOTrainer on the main job's recipe, with the
held-out greedy evaluation after every generation batch, its time kept apart.

Runs inside the TRL venv (trl 1.16, torch 2.13 CPU, math-verify), never in meshrl's:

    ~/.cache/meshrl-bench/trl-venv/bin/python benchmarks/trl_grpo_eval_runner.py SPEC.json

SPEC (written by time_to_accuracy.py): model, train and eval rows (verl JSON lines), steps (meshrl
steps: one generation batch each), prompts, samples, micro, mini_batches, max_tokens, lr,
min_lr_ratio, eval_prompts, seed, judge (the path of meshrl's verify_worker.py, which imports
nothing of meshrl: the same math-verify judge meshrl's reward uses), launched_at (the wall clock
when the benchmark started this process), result (where the JSON answer goes).

One meshrl step is one generation batch of prompts × samples, trained as `mini_batches`
optimizer steps of micro-batches of `micro`; TRL calls each optimizer step a step, so its
schedule runs over steps × mini_batches. The answer: per-optimizer-step seconds (a step that
generated is longer by the generation), rewards, and the evaluations with their effective time
(wall since launch minus every evaluation's own time so far).
"""

import importlib.util
import json
import logging
import sys
import time

import torch
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

SPEC = json.loads(open(sys.argv[1]).read())
# the judge runs without math-verify's own timeouts, as in meshrl's worker; its warning about that
# would repeat for every answer
logging.getLogger("math_verify").setLevel(logging.ERROR)


def load_judge(path: str):
    spec = importlib.util.spec_from_file_location("verify_worker", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.verify_answer


verify_answer = load_judge(SPEC["judge"])


def read_rows(path: str) -> list[dict]:
    return [json.loads(line) for line in open(path) if line.strip()]


def correct(completions, answer, **_):
    """The training reward: math-verify equality with the ground truth, as meshrl's `math_verify`."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [float(verify_answer(t, g)[0]) for t, g in zip(texts, answer)]


class HeldOut:
    """Greedy answers to the first `eval_prompts` eval rows, judged by the same judge."""

    def __init__(self, tokenizer, rows: list[dict]):
        self.tokenizer = tokenizer
        self.truths = [r["reward_model"]["ground_truth"] for r in rows]
        self.texts = tokenizer.apply_chat_template(
            [r["prompt"] for r in rows], add_generation_prompt=True, tokenize=False
        )

    @torch.no_grad()
    def accuracy(self, model) -> float:
        side, self.tokenizer.padding_side = self.tokenizer.padding_side, "left"
        batch = self.tokenizer(self.texts, return_tensors="pt", padding=True, add_special_tokens=False)
        self.tokenizer.padding_side = side
        out = model.generate(**batch, do_sample=False, max_new_tokens=SPEC["max_tokens"])
        answers = self.tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        return sum(verify_answer(a, g)[0] for a, g in zip(answers, self.truths)) / len(answers)


class Clock(TrainerCallback):
    """Optimizer-step times, and an evaluation before training and after every generation batch."""

    def __init__(self, held_out: HeldOut):
        self.held_out, self.step_s, self.evals, self.eval_total, self.began = held_out, [], [], 0.0, 0.0

    def evaluate(self, model, step: int) -> None:
        began = time.perf_counter()
        was_training = model.training
        model.eval()
        accuracy = self.held_out.accuracy(model)
        model.train(was_training)
        took = time.perf_counter() - began
        effective = time.time() - SPEC["launched_at"] - self.eval_total - took
        self.eval_total += took
        self.evals.append({"step": step, "t": effective, "accuracy": accuracy, "eval_s": took})
        print(f"[trl] step {step}: held-out {accuracy:.3f} at {effective:.1f} s", flush=True)

    def on_train_begin(self, args, state, control, model=None, **_):
        self.evaluate(model, 0)

    def on_step_begin(self, *_, **__):
        self.began = time.perf_counter()

    def on_step_end(self, args, state, control, model=None, **_):
        self.step_s.append(time.perf_counter() - self.began)
        if state.global_step % SPEC["mini_batches"] == 0:
            self.evaluate(model, state.global_step // SPEC["mini_batches"])


def grpo_config() -> GRPOConfig:
    """The main job's recipe in TRL's words; HF generate (TRL's vLLM modes do not run on this CPU)."""
    mini = SPEC["mini_batches"]
    per_optimizer_step = SPEC["prompts"] * SPEC["samples"] // mini
    return GRPOConfig(
        output_dir=SPEC["out"],
        per_device_train_batch_size=SPEC["micro"],
        gradient_accumulation_steps=per_optimizer_step // SPEC["micro"],
        steps_per_generation=SPEC["prompts"] * SPEC["samples"] // SPEC["micro"],
        num_generations=SPEC["samples"],
        max_completion_length=SPEC["max_tokens"],
        beta=0.0,
        num_iterations=1,
        loss_type="grpo",
        learning_rate=SPEC["lr"],
        lr_scheduler_type="cosine_with_min_lr",
        lr_scheduler_kwargs={"min_lr_rate": SPEC["min_lr_ratio"]},
        warmup_steps=0,
        max_steps=SPEC["steps"] * mini,
        use_cpu=True,
        bf16=False,
        temperature=1.0,
        top_k=0,
        top_p=1.0,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        seed=SPEC["seed"],
        data_seed=SPEC["seed"],
        gradient_checkpointing=False,
        use_vllm=False,
        model_init_kwargs={"dtype": "float32"},
    )


def main() -> None:
    train = read_rows(SPEC["train"])
    data = Dataset.from_list([{"prompt": r["prompt"], "answer": r["reward_model"]["ground_truth"]} for r in train])
    trainer = GRPOTrainer(model=SPEC["model"], reward_funcs=correct, args=grpo_config(), train_dataset=data)
    clock = Clock(HeldOut(trainer.processing_class, read_rows(SPEC["eval"])[: SPEC["eval_prompts"]]))
    trainer.add_callback(clock)
    trainer.train()
    logged = [h for h in trainer.state.log_history if "reward" in h]
    result = {"step_s": clock.step_s, "evals": clock.evals, "reward": [h["reward"] for h in logged]}
    json.dump(result, open(SPEC["result"], "w"))


if __name__ == "__main__":
    main()
