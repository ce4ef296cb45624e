"""`meshrl models tiny`: a tiny model from the command line, with a head size vLLM's CPU build serves."""

import json
import subprocess
import sys
from pathlib import Path

from meshrl.plan.head_size import head_size_problem


def test_meshrl_models_tiny_writes_a_model_the_checks_accept(tmp_path):
    meshrl = str(Path(sys.executable).with_name("meshrl"))
    out = tmp_path / "tiny"
    done = subprocess.run(
        [meshrl, "models", "tiny", "--out", str(out), "--hidden", "128", "--heads", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    config = json.loads((out / "config.json").read_text())
    assert (config["hidden_size"], config["num_attention_heads"], config["head_dim"]) == (128, 4, 32)
    assert (out / "model.safetensors").is_file() and (out / "tokenizer.json").is_file()
    assert head_size_problem(str(out), cpu_build=True) is None
