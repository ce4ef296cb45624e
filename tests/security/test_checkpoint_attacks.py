"""A crafted checkpoint runs no code, and an altered one is refused where the run has a key.

The attacker (anyone who can write a checkpoint folder: a compromised service of the run on
a shared volume, a checkpoint copied from elsewhere) changes files and recomputes the
manifest's sha256 fields, which have no key. Against the real loaders (load_checkpoint, as
the learner's resume and eval use it, and export_hf, as `meshrl export` and the gateway's
ExportRun use it):
- DCP's `.metadata` replaced by a pickle that calls os.mkdir, and an optimizer value saved
  as such a pickle: the marker directory must not appear, and the load names the refusal;
- in a run dir with the run's key (RUN_DIR/keys, made by the launcher), a tensor altered and
  the manifest re-hashed: refused as not signed by the run's key; the learner's own save
  (signed with MESHRL_RUN_SIGNING_KEY_FILE) loads.

Run: .venv/bin/python -m pytest tests/security/test_checkpoint_attacks.py -q
"""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch

from meshrl.inputs.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from meshrl.inputs.checkpoint.export import export_hf
from meshrl.inputs.checkpoint.manifest import _self_hash, data_files, hash_files
from meshrl.inputs.checkpoint.parts import collect_parts, part_state
from meshrl.security.run_key import create_run_keys, run_key_env
from tests.unit.inputs.checkpoint.helpers import tiny_model, trainer


class Mkdir:
    """Unpickling this calls os.mkdir(path): the attacker's code, made visible."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return os.mkdir, (self.path,)


def saved(run: Path, step: int = 1) -> Path:
    model = tiny_model()
    optimizer, scheduler = trainer(model)
    return save_checkpoint(run, step, model=model, optimizer=optimizer, scheduler=scheduler, config_hash="x")


def rehash(ckpt: Path) -> None:
    """What the attacker does after changing files: the manifest's unkeyed hashes, redone."""
    manifest = json.loads((ckpt / "manifest.json").read_text())
    manifest["files"] = hash_files(ckpt, data_files(ckpt))
    manifest["manifest_sha256"] = _self_hash(manifest)
    (ckpt / "manifest.json").write_text(json.dumps(manifest))


def evil_metadata(ckpt: Path, marker: Path) -> None:
    (ckpt / "dcp" / ".metadata").write_bytes(pickle.dumps(Mkdir(marker)))
    rehash(ckpt)


def evil_optimizer_value(ckpt: Path, marker: Path) -> None:
    import torch.distributed.checkpoint as dcp

    model = tiny_model()
    optimizer, _ = trainer(model)
    state = {"policy": part_state(collect_parts(model, optimizer, None, None)["policy"])}
    state["policy"]["optim"]["param_groups"][0]["lr"] = Mkdir(marker)
    for old in (ckpt / "dcp").iterdir():
        old.unlink()
    dcp.save(state, storage_writer=dcp.FileSystemWriter(str(ckpt / "dcp")), no_dist=True)
    rehash(ckpt)


def load_for_resume(ckpt: Path) -> None:
    model = tiny_model(seed=1)
    optimizer, scheduler = trainer(model)
    load_checkpoint(ckpt, model=model, optimizer=optimizer, scheduler=scheduler)


@pytest.mark.parametrize(
    "load,craft", [("resume", evil_metadata), ("export", evil_metadata), ("resume", evil_optimizer_value)]
)  # export reads no optimizer value
def test_a_crafted_checkpoint_runs_no_code(tmp_path, craft, load):
    ckpt, marker = saved(tmp_path / "run"), tmp_path / "attacker-was-here"
    craft(ckpt, marker)
    with pytest.raises(CheckpointError) as refused:
        if load == "resume":
            load_for_resume(ckpt)
        else:
            export_hf(ckpt, tmp_path / "exported")
    assert not marker.exists(), "unpickling the checkpoint ran the attacker's code"
    assert "not plain data" in str(refused.value) or "refusing to unpickle" in str(refused.value)


def test_an_altered_checkpoint_of_a_run_with_a_key_is_refused(tmp_path, monkeypatch):
    run = tmp_path / "run"
    create_run_keys(run)
    for name, value in run_key_env(run, "learner").items():
        monkeypatch.setenv(name, value)  # the learner signs its saves
    good, victim = saved(run, 1), saved(run, 2)
    load_for_resume(good)  # signed by the learner: loads
    shard = next((victim / "dcp").glob("*.distcp"))
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of some weight
    shard.write_bytes(bytes(data))
    rehash(victim)
    with pytest.raises(CheckpointError, match="does not verify.*only the run's learner signs its checkpoints"):
        load_for_resume(victim)
    manifest = json.loads((victim / "manifest.json").read_text())
    manifest.pop("signature")
    manifest["manifest_sha256"] = _self_hash(manifest)
    (victim / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match="is not signed"):
        export_hf(victim, tmp_path / "exported")


def test_a_value_that_is_plain_data_still_loads(tmp_path):
    ckpt = saved(tmp_path / "run")
    model = tiny_model(seed=1)
    optimizer, scheduler = trainer(model)
    load_checkpoint(ckpt, model=model, optimizer=optimizer, scheduler=scheduler)
    assert (
        optimizer.param_groups[0]["lr"] == pytest.approx(1e-2 / 3)
        and optimizer.param_groups[0]["betas"] == (0.9, 0.999)
        and torch.is_tensor(model.lm_head.weight)
    )
