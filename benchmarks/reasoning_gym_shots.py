"""How often SmolLM2-135M-Instruct writes reasoning-gym's `<answer>...</answer>` tag (and the right
answer in it) with 0, 1 and 2 worked examples as turns before the question: why
`meshrl data reasoning-gym --shots` exists. Plain transformers sampling (T=1, 24 new tokens, 8
samples per prompt), no mesh; the worked examples are rows 8 and 9 of the file, the questions
rows 0-7. Prints one line per number of shots.

    meshrl data reasoning-gym --task leg_counting --config min_animals=1 --config max_animals=1 \\
        --config max_instances=3 --n 200 --seed 1 --out /tmp/rg_legs_noshots.jsonl
    .venv/bin/python benchmarks/reasoning_gym_shots.py /tmp/rg_legs_noshots.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from meshrl.inputs.data.reasoning_gym.answer import extract_answer

MODEL = Path.home() / ".cache/meshrl/models/SmolLM2-135M-Instruct"
SAMPLES, MAX_NEW = 8, 24


def shot_turns(rows: list[dict], k: int) -> list[dict]:
    turns = []
    for row in rows[:k]:
        answer = row["reward_model"]["ground_truth"]
        turns += [row["prompt"][1], {"role": "assistant", "content": f"<answer>{answer}</answer>"}]
    return turns


def replies(model, tok, messages: list[dict]) -> list[str]:
    text = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = tok(text, return_tensors="pt").input_ids
    torch.manual_seed(0)
    out = model.generate(
        ids, do_sample=True, temperature=1.0, max_new_tokens=MAX_NEW, num_return_sequences=SAMPLES,
        pad_token_id=tok.eos_token_id,
    )  # fmt: skip
    return [tok.decode(o[ids.shape[1] :], skip_special_tokens=True) for o in out]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", help="rows of meshrl data reasoning-gym made without --shots")
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.rows)][:10]
    tok, model = AutoTokenizer.from_pretrained(MODEL), AutoModelForCausalLM.from_pretrained(MODEL)
    for k in (0, 1, 2):
        tagged = right = 0
        for row in rows[:8]:
            for reply in replies(model, tok, [row["prompt"][0], *shot_turns(rows[8:], k), row["prompt"][1]]):
                answer = extract_answer(reply)
                tagged += answer is not None
                right += answer == row["reward_model"]["ground_truth"]
        print(f"shots={k}: tagged {tagged}/{8 * SAMPLES}, right {right}/{8 * SAMPLES}", flush=True)


if __name__ == "__main__":
    main()
