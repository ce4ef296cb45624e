"""An older meshrl's checkpoint is refused in one line naming the converter; converted with the
explicit flag, it resumes exactly where it was saved; a foreign format-2 checkpoint is signed."""

import json
import random

import numpy as np
import pytest
import torch

from meshrl.inputs.checkpoint import CheckpointError, load_checkpoint
from meshrl.inputs.checkpoint.convert import convert_checkpoint
from tests.unit.inputs.checkpoint.helpers import tiny_model, train_step, trainer
from tests.unit.inputs.checkpoint.legacy_writer import write_legacy


def _trained():
    torch.manual_seed(0)
    model = tiny_model(attention_dropout=0.0)
    optimizer, scheduler = trainer(model)
    train_step(model, optimizer, scheduler)
    return model, optimizer, scheduler


def _seed(n: int) -> None:
    random.seed(n), np.random.seed(n), torch.manual_seed(n)


def _fresh():
    model = tiny_model(seed=3, attention_dropout=0.0)
    return (model, *trainer(model))


def test_a_legacy_checkpoint_is_refused_then_converted_and_resumes_exactly(tmp_path):
    model, optimizer, scheduler = _trained()
    ckpt = write_legacy(tmp_path / "run", 1, model, optimizer, scheduler, {"step": 1})
    rng_at_save = torch.get_rng_state()
    fresh, f_opt, f_sched = _fresh()
    with pytest.raises(CheckpointError) as refused:
        load_checkpoint(tmp_path / "run", model=fresh, optimizer=f_opt, scheduler=f_sched)
    assert "\n" not in str(refused.value)
    assert f"meshrl checkpoints convert {ckpt} --i-trust-this-file" in str(refused.value)

    assert convert_checkpoint(ckpt).startswith("converted")
    manifest = json.loads((ckpt / "manifest.json").read_text())
    assert manifest["format"] == "meshrl-checkpoint/2" and manifest["signature"]
    assert not [n for n in manifest["files"] if n.endswith(".pt") or n.startswith("dcp/")]
    assert (tmp_path / "run" / "checkpoints" / "rolled_back").is_dir()  # the old folder kept
    torch.manual_seed(99)
    assert load_checkpoint(ckpt, model=fresh, optimizer=f_opt, scheduler=f_sched) == {"step": 1}
    assert torch.equal(torch.get_rng_state(), rng_at_save)
    assert f_sched.last_epoch == 1 and f_opt.param_groups[0]["betas"] == (0.9, 0.999)
    _seed(5)
    want = train_step(model, optimizer, scheduler)
    _seed(5)
    assert torch.equal(train_step(fresh, f_opt, f_sched), want)  # the next step, bit for bit


def test_a_checkpoint_signed_by_another_key_is_signed_again(tmp_path, monkeypatch, save_run):
    monkeypatch.setenv("MESHRL_CHECKPOINT_KEY_FILE", str(tmp_path / "someone-else.key"))
    run = save_run([1])
    monkeypatch.setenv("MESHRL_CHECKPOINT_KEY_FILE", str(tmp_path / "mine.key"))
    with pytest.raises(CheckpointError, match="no checkpoint key at .*mine.key"):
        load_checkpoint(run, model=tiny_model())
    save_run([2], run_dir=tmp_path / "other")  # this user's first save makes mine.key
    with pytest.raises(CheckpointError, match="signature your key does not verify.*--i-trust-this-file"):
        load_checkpoint(run / "checkpoints" / "step_1", model=tiny_model())
    assert convert_checkpoint(run / "checkpoints" / "step_1").startswith("signed")
    assert load_checkpoint(run / "checkpoints" / "step_1", model=tiny_model()) == {"step": 1}
