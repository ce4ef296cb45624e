"""What `meshrl eval` accepts as CHECKPOINT_OR_EXPORT, and which run config comes with it."""

import json

import pytest

from meshrl.errors import LaunchError
from meshrl.eval.source import resolve_source
from meshrl.inputs.checkpoint.errors import CheckpointError


def hf_dir(path, provenance=None):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(b"")
    if provenance is not None:
        (path / "meshrl_export.json").write_text(json.dumps(provenance))
    return path


def test_export_dir_brings_the_config_of_its_checkpoint(tmp_path):
    ckpt = tmp_path / "run" / "checkpoints" / "step_4"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text(json.dumps({"run": {"name": "r"}}))
    source = resolve_source(hf_dir(tmp_path / "export", {"checkpoint": str(ckpt), "step": 4}))
    assert (source.kind, source.step, source.saved_config) == ("export", 4, {"run": {"name": "r"}})


def test_plain_hf_dir_has_no_saved_config(tmp_path):
    source = resolve_source(hf_dir(tmp_path / "model"))
    assert (source.kind, source.step, source.saved_config) == ("export", None, None)


def test_errors_name_what_to_pass(tmp_path):
    with pytest.raises(LaunchError, match="does not exist; pass RUN_DIR"):
        resolve_source(tmp_path / "absent")
    (tmp_path / "run" / "checkpoints" / "step_2").mkdir(parents=True)
    with pytest.raises(CheckpointError, match=r"no checkpoint for step 5 .*available steps: \[2\]"):
        resolve_source(tmp_path / "run" / "checkpoints" / "step_5")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CheckpointError, match="neither a checkpoint.*or a Hugging Face model dir"):
        resolve_source(tmp_path / "empty")
