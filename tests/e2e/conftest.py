"""End-to-end fixtures: the whole mesh (embedded NATS + every service as its own process)
on the tiny model, driven through `meshrl.launch.local.run_local` — what `meshrl train` runs."""

import json

import pytest

from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows, preference_pairs
from meshrl.inputs.data.load import write_rows
from meshrl.launch.local import run_local

# A learnable synthetic reward for a random tiny model: a response earns 1 when it holds a
# vowel. About a third of 8-character random responses do, so groups are mixed and GRPO has
# a signal to push toward vowels.
VOWEL_REWARD = [{"name": "vowel", "kind": "regex", "weight": 1.0, "params": {"pattern": "[aeiou]"}}]


@pytest.fixture(scope="session")
def e2e_data(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e_data")
    return {
        "train": str(write_rows(root / "train.jsonl", arithmetic_rows(128, seed=0))),
        "eval": str(write_rows(root / "eval.jsonl", arithmetic_rows(16, seed=1))),
        "pairs": str(write_rows(root / "pairs.jsonl", preference_pairs(64, seed=0))),
    }


def mesh_config(model_dir, data, run_dir, *overrides, preset="grpo", train_key="train"):
    return load_config(
        base={
            "run": {"name": f"e2e-{preset}", "dir": str(run_dir)},
            "model": {"path": str(model_dir)},
            "data": {"train": data[train_key], "eval": data["eval"], "max_prompt_tokens": 128},
            "algorithm": {"preset": preset},
            "rollout": {"sampling": {"group_size": 8, "max_tokens": 8}, "kv_cache_gb": 1.0, "max_model_len": 256},
            "reward": {"components": VOWEL_REWARD},
            "learner": {"steps": 3, "prompts_per_step": 4},
            "trainer": {"micro_batch_size": 32, "optim": {"lr": 1e-3}},
        },
        overrides=list(overrides),
    )


def mesh_run(model_dir, data, run_dir, *overrides, preset="grpo", train_key="train"):
    """One whole run of the mesh → (result, metrics rows, ledger events)."""
    cfg = mesh_config(model_dir, data, run_dir, *overrides, preset=preset, train_key=train_key)
    result = run_local(cfg, run_dir, progress=False, grace_s=10.0)
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    ledger_path = run_dir / "groups.jsonl"
    ledger = [json.loads(x) for x in ledger_path.read_text().splitlines()] if ledger_path.exists() else []
    return result, metrics, ledger


@pytest.fixture
def run_mesh(tiny_model_dir, e2e_data, tmp_path):
    """run_mesh(*overrides, preset=...) → (result, metrics rows, ledger events), in tmp_path / "run"."""

    def run(*overrides, preset="grpo", train_key="train"):
        return mesh_run(tiny_model_dir, e2e_data, tmp_path / "run", *overrides, preset=preset, train_key=train_key)

    return run
