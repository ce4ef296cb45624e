"""`meshrl eval RUN_DIR DATA` end to end as a process: the newest checkpoint is exported, NATS +
rollout (vLLM) + reward start, the metrics come out as a table and a JSON file, and every
process it started is gone afterwards. The expected accuracy is computed independently: the
ground truth of half the rows is the tiny model's greedy answer from a transformers forward.

Starts its own vLLM engine (≈1 min on 2 cores).
Run: .venv/bin/python -m pytest tests/services/eval/test_eval_cli.py
"""

import json
import re
import subprocess
import sys

import psutil
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]
PROMPTS = ["one", "two", "three", "four"]
MAX_TOKENS = 8


def write_checkpoint(run_dir, model_dir, step: int = 3):
    """A real learner-style checkpoint of the tiny model, with its resolved run config."""
    import torch
    from transformers import AutoModelForCausalLM

    from meshrl.config import load_config
    from meshrl.inputs.checkpoint import save_checkpoint

    cfg = load_config(
        base={
            "run": {"name": "cli", "dir": str(run_dir)},
            "model": {"path": str(model_dir)},
            "data": {"train": "gone.jsonl"},
            "rollout": {"kv_cache_gb": 0.25, "max_model_len": 256, "sampling": {"max_tokens": MAX_TOKENS}},
            "reward": {"components": [{"name": "em", "kind": "exact_match"}]},
            "eval": {"correct_component": "em"},
        }
    )
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    save_checkpoint(
        run_dir,
        step,
        model=model,
        optimizer=torch.optim.AdamW(model.parameters()),
        config_hash="h",
        config=cfg.model_dump(mode="json"),
    )


def hf_greedy(model_dir) -> list[str]:
    """Each prompt's greedy answer from transformers (independent of vLLM and meshrl.eval)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32).eval()
    texts = []
    for prompt in PROMPTS:
        text = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        ids = tok(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        out = model.generate(ids, do_sample=False, max_new_tokens=MAX_TOKENS, pad_token_id=tok.pad_token_id)
        texts.append(tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True))
    return texts


def children_using(path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any(str(path) in part for part in proc.info["cmdline"] or ()):
            found.append(proc)
    return found


def test_eval_a_run_dir_end_to_end(tiny_model_dir, tmp_path):
    write_checkpoint(tmp_path / "run", tiny_model_dir)
    greedy = hf_greedy(tiny_model_dir)
    data = tmp_path / "eval.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": p, "reward_model": {"ground_truth": g if i % 2 == 0 else "x"}}) + "\n"
            for i, (p, g) in enumerate(zip(PROMPTS, greedy))
        )
    )
    out, work = tmp_path / "result.json", tmp_path / "work"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "eval",
            str(tmp_path / "run"),
            str(data),
            "--out",
            str(out),
            "--work-dir",
            str(work),
            "--no-progress",
            "eval.pass_k=2",
        ],
        capture_output=True,
        text=True,
        timeout=360,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^eval/accuracy +0\.5000$", proc.stdout, re.M) and f"wrote {out}" in proc.stdout
    result = json.loads(out.read_text())
    assert result["step"] == 3 and result["metrics"]["eval/n"] == 4
    assert result["metrics"]["eval/accuracy"] == 0.5 and "eval/pass@2" in result["metrics"]
    samples = result["samples"]
    assert [s["response"] for s in samples if s["mode"] == "greedy"] == greedy
    assert sum(s["mode"] == "sampled" for s in samples) == 4 * 2
    assert (work / "model" / "model.safetensors").is_file()  # the checkpoint, exported
    assert children_using(work) == []  # rollout, reward and NATS all stopped
