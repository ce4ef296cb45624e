"""Model settings the model cannot take are refused before anything starts (one line, exit 2):
a LoRA target matching no layer, a rank at or above a layer's smaller side, a tensor-parallel
size that does not split the heads, an MLflow server that does not answer. Checked on the tiny
Llama (hidden 64, 4 heads of 32, 2 KV heads: q_proj 64 → 128, k_proj 64 → 64)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.config import ConfigError, load_config
from meshrl.errors import LaunchError
from meshrl.launch.model_settings import check_model_settings, model_setting_problems
from meshrl.launch.tracker_probe import tracker_problems


def config(model_dir, *overrides):
    return load_config(
        base={"model": {"path": str(model_dir)}, "data": {"train": "t.jsonl"}}, overrides=list(overrides)
    )


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nothing listens there


BAD = [
    (["model.lora.target_modules=[q_proj,qkv_proj]"], "entry 'qkv_proj' matches no linear layer of LlamaForCausalLM"),
    (["model.lora.rank=64"], "model.lora.rank=64 is not below the smaller side of"),
    (["rollout.tensor_parallel_size=3"], "rollout.tensor_parallel_size=3 cannot split the model's 4 attention heads"),
]


@pytest.mark.parametrize("overrides, expected", BAD, ids=["lora-target", "lora-rank", "tensor-parallel"])
def test_a_setting_the_model_cannot_take_is_named(tiny_model_dir, overrides, expected):
    problems = model_setting_problems(config(tiny_model_dir, *overrides))
    assert len(problems) == 1 and expected in problems[0]
    with pytest.raises(ConfigError, match=expected.split(" ")[0].replace("[", r"\[")):
        check_model_settings(config(tiny_model_dir, *overrides))


def test_settings_that_fit_pass(tiny_model_dir):
    fits = config(tiny_model_dir, "model.lora.rank=8", "model.lora.target_modules=all-linear")
    assert model_setting_problems(fits) == [] and tracker_problems(fits) == []
    assert model_setting_problems(config(tiny_model_dir, "rollout.tensor_parallel_size=2")) == []


def test_an_mlflow_server_that_does_not_answer_is_refused(tiny_model_dir):
    port = closed_port()
    cfg = config(
        tiny_model_dir, "telemetry.trackers=[mlflow]", f"telemetry.mlflow.tracking_uri=http://127.0.0.1:{port}"
    )
    with pytest.raises(LaunchError, match=rf"no server answers at 127.0.0.1:{port}.*mlflow server --port {port}"):
        check_model_settings(cfg)


def test_an_mlflow_server_that_answers_passes(tiny_model_dir):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        uri = f"http://127.0.0.1:{server.getsockname()[1]}"
        assert (
            tracker_problems(
                config(tiny_model_dir, "telemetry.trackers=[mlflow]", f"telemetry.mlflow.tracking_uri={uri}")
            )
            == []
        )


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "train"])
def test_meshrl_train_refuses_before_anything_starts(tiny_model_dir, tmp_path, dry_run):
    """The real command: exit 2, one line naming the key, and the run dir never made (no NATS,
    no service started)."""
    path = tmp_path / "run.yaml"
    path.write_text(
        yaml.safe_dump({"model": {"path": str(tiny_model_dir), "lora": {"rank": 64}}, "data": {"train": str(path)}})
    )
    run_dir = tmp_path / "run"
    argv = [str(Path(sys.executable).with_name("meshrl")), "train", str(path), f"run.dir={run_dir}"] + (
        ["--dry-run"] if dry_run else []
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "model.lora.rank=64" in lines[0]
    assert not run_dir.exists()


def test_meshrl_doctor_fails_the_setting(tiny_model_dir):
    from meshrl.cli.doctor.checks_model import check_model

    class Ctx:  # the doctor's context, with only what the model check reads
        config = config(tiny_model_dir, "model.lora.rank=64", "rollout.tensor_parallel_size=3")
        parameters = 0

    found, *rows = check_model(Ctx())
    rows = [row for row in rows if row.status == "fail"]  # a CPU host also warns about the adapter push
    assert found.status == "pass" and len(rows) == 2
    assert "rollout.tensor_parallel_size=3" in rows[0].fix and "model.lora.rank=64" in rows[1].fix


def test_a_core_split_that_leaves_a_service_no_core_is_refused_before_anything_starts(tiny_model_dir, tmp_path):
    """The real command on this host's cores: rollout given every usable core leaves the learner
    none (exit 2, one line, no run dir)."""
    import os

    usable = len(os.sched_getaffinity(0))
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"model": {"path": str(tiny_model_dir)}, "data": {"train": str(path)}}))
    run_dir = tmp_path / "run"
    argv = [str(Path(sys.executable).with_name("meshrl")), "train", str(path), f"run.dir={run_dir}", "--dry-run"]
    argv += ["launch.cores=split", f"launch.rollout_cores={usable}"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"launch.rollout_cores={usable} leaves the learner no core" in lines[0]
    assert not run_dir.exists()


def test_a_head_size_the_cpu_engine_cannot_serve_is_refused(tiny_model_dir, tmp_path, monkeypatch):
    """The tiny Llama with its config saying head_dim 16 (hidden 64 / 4 heads): before, the
    rollout crash-looped at engine start."""
    import json
    import shutil

    from meshrl.plan import head_size

    model = shutil.copytree(tiny_model_dir, tmp_path / "model")
    hf_config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**hf_config, "head_dim": 16}))
    monkeypatch.setattr(head_size, "vllm_is_cpu_build", lambda: True)
    with pytest.raises(ConfigError, match=r"head_dim=16\) has no kernel in vLLM's CPU build"):
        check_model_settings(config(model))
    monkeypatch.setattr(head_size, "vllm_is_cpu_build", lambda: False)
    assert model_setting_problems(config(model)) == []
