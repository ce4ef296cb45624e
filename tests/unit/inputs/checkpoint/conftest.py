"""Fixtures: a run dir with checkpoints of the tiny model at chosen steps."""

import pytest
import torch

from meshrl.inputs.checkpoint import save_checkpoint
from tests.unit.inputs.checkpoint.helpers import tiny_model, train_step, trainer

CONFIG = {
    "model": {"path": "/models/tiny", "gguf_file": None},
    "algorithm": {
        "advantage_estimator": "grpo",
        "policy_loss": "ppo",
        "critic": {"enabled": False},
        "offline": False,
        "kl_coef": 0.04,
    },
}


@pytest.fixture
def save_run(tmp_path):
    """save_run(steps) → run dir with one checkpoint per step (one train step between saves)."""

    def make(steps, run_dir=None):
        run = run_dir or tmp_path / "run"
        run.mkdir(exist_ok=True)
        torch.manual_seed(0)
        model = tiny_model()
        optimizer, scheduler = trainer(model)
        for step in steps:
            train_step(model, optimizer, scheduler)
            save_checkpoint(
                run,
                step,
                model=model,
                optimizer=optimizer,
                scheduler=scheduler,
                state={"step": step},
                config_hash=f"h{step}",
                config=CONFIG,
            )
        return run

    return make


CHARS = "0123456789+-=?. abcdefghijklmnopqrstuvwxyz"  # 5 specials + 42 chars → vocab 64


@pytest.fixture
def tokenizer_dir(tmp_path):
    from meshrl.inputs.models.tiny import build_tokenizer
    from meshrl.inputs.models.tokenizer_files import write_portable_tokenizer_files

    tokenizer = build_tokenizer(CHARS)
    assert len(tokenizer) == 64
    out = tmp_path / "tok"
    tokenizer.save_pretrained(out)
    write_portable_tokenizer_files(out, tokenizer, model_max_length=64)
    return out
