"""Crashes, corruption and tampering are detected; the previous good checkpoint is used."""

import json
import logging

import pytest
import torch

from meshrl.inputs.checkpoint import (
    CheckpointError,
    latest_good_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)
from meshrl.inputs.checkpoint import save as save_module
from tests.unit.inputs.checkpoint.helpers import tiny_model, trainer


def _ckpt(run, step):
    return run / "checkpoints" / f"step_{step}"


def _flip_byte(path, offset=100):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_crash_mid_save_leaves_only_an_ignored_tmp_dir(save_run, monkeypatch, caplog):
    run = save_run([1])
    model = tiny_model()
    optimizer, _ = trainer(model)

    def crash(*args, **kwargs):
        raise OSError("disk full (simulated)")

    monkeypatch.setattr(save_module, "write_manifest", crash)
    with pytest.raises(OSError, match="simulated"):
        save_checkpoint(run, 2, model=model, optimizer=optimizer, config_hash="x")
    partial = list((run / "checkpoints").glob("step_2.tmp-*"))
    assert len(partial) == 1 and (partial[0] / "model" / "policy.safetensors").exists()
    assert not _ckpt(run, 2).exists()
    with caplog.at_level(logging.WARNING, logger="meshrl.inputs.checkpoint.scan"):
        assert latest_good_checkpoint(run) == _ckpt(run, 1)
    assert "partial save" in caplog.text
    assert [(r.step, r.status) for r in list_checkpoints(run)] == [(1, "ok"), (2, "partial")]


def test_corrupted_file_is_named_and_previous_good_is_used(save_run, caplog):
    run = save_run([1, 2, 3])
    _flip_byte(_ckpt(run, 3) / "model" / "policy.safetensors")
    (_ckpt(run, 2) / "manifest.json").unlink()
    with caplog.at_level(logging.WARNING):
        assert latest_good_checkpoint(run) == _ckpt(run, 1)
    with pytest.raises(
        CheckpointError,
        match=r"step_3: corrupt checkpoint: checksum mismatch "
        r"in model/policy.safetensors",
    ):
        verify_checkpoint(_ckpt(run, 3))
    rows = {r.step: r for r in list_checkpoints(run)}
    assert [rows[s].status for s in (1, 2, 3)] == ["ok", "corrupt", "corrupt"]
    assert "missing manifest.json" in rows[2].reason
    model = tiny_model(seed=7)
    assert load_checkpoint(run, model=model) == {"step": 1}  # run dir → newest good one


def test_loading_a_corrupt_checkpoint_directly_refuses_before_touching_the_model(save_run):
    run = save_run([1])
    _flip_byte(_ckpt(run, 1) / "state.json", offset=2)
    model = tiny_model(seed=7)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(CheckpointError, match="checksum mismatch in state.json"):
        load_checkpoint(_ckpt(run, 1), model=model)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))


def test_truncated_and_unexpected_files_are_reported(save_run):
    run = save_run([1])
    rng = _ckpt(run, 1) / "rng" / "rank_0.safetensors"
    rng.write_bytes(rng.read_bytes()[:10])
    (_ckpt(run, 1) / "stray.bin").write_bytes(b"x")
    with pytest.raises(CheckpointError) as err:
        verify_checkpoint(_ckpt(run, 1))
    assert "size mismatch in rng/rank_0.safetensors: 10 bytes" in str(err.value)
    assert "unexpected file stray.bin not in the manifest" in str(err.value)


@pytest.mark.parametrize("edit", ["checksum", "step", "garbage"])
def test_tampered_manifest_is_a_clear_error(save_run, edit):
    run = save_run([1])
    path = _ckpt(run, 1) / "manifest.json"
    body = json.loads(path.read_text())
    if edit == "checksum":
        body["files"]["state.json"]["sha256"] = "0" * 64
    elif edit == "step":
        body["step"] = 9
    path.write_text("{not json" if edit == "garbage" else json.dumps(body))
    with pytest.raises(CheckpointError, match="tampered manifest"):
        load_checkpoint(_ckpt(run, 1), model=tiny_model())
    with pytest.raises(CheckpointError, match=r"no usable checkpoint in .*step_1: .*tampered"):
        latest_good_checkpoint(run)


def test_no_checkpoints_and_missing_run_dir(tmp_path):
    with pytest.raises(CheckpointError, match="run dir .*nowhere does not exist"):
        latest_good_checkpoint(tmp_path / "nowhere")
    with pytest.raises(CheckpointError, match="no usable checkpoint.*empty or missing"):
        latest_good_checkpoint(tmp_path)
    assert latest_good_checkpoint(tmp_path, missing_ok=True) is None
    with pytest.raises(CheckpointError, match="neither a checkpoint"):
        load_checkpoint(tmp_path, model=tiny_model())


def test_saving_an_existing_step_moves_the_old_one_aside(save_run):
    run = save_run([1])
    old_manifest = (_ckpt(run, 1) / "manifest.json").read_text()
    model = tiny_model(seed=4)
    save_checkpoint(run, 1, model=model, optimizer=None, config_hash="new")
    moved = list((run / "checkpoints" / "rolled_back").glob("replaced-*/step_1"))
    assert len(moved) == 1 and (moved[0] / "manifest.json").read_text() == old_manifest
    assert verify_checkpoint(_ckpt(run, 1))["config_hash"] == "new"


def test_architecture_mismatch_is_a_checkpoint_error(save_run):
    run = save_run([1])
    with pytest.raises(CheckpointError, match="could not load parts .*does not match"):
        load_checkpoint(run, model=tiny_model(hidden_size=48))
