"""`meshrl train --dry-run`, overrides, user errors (exit 2, no traceback) and `meshrl serve`."""

import subprocess
import sys

import pytest
import yaml

from meshrl import topology
from meshrl.cli.main import main
from meshrl.cli.serve import SERVICES

SAMPLE = {
    "run": {"name": "t"},
    "model": {"path": "/nonexistent/model"},
    "data": {"train": "/nonexistent/train.jsonl"},
    "algorithm": {"preset": "grpo"},
    "rollout": {"sampling": {"group_size": 4}},
    "learner": {"steps": 3, "prompts_per_step": 6, "max_staleness": 1},
    "trainer": {"mini_batches": 2, "micro_batch_size": 5},
}


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(SAMPLE))
    return path


def run_cli(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_dry_run_prints_config_and_batch_arithmetic(capsys, config_file):
    rc, out, err = run_cli(capsys, "train", config_file, "--dry-run")
    assert rc == 0
    config_part, plan = out.split("---\n")
    resolved = yaml.safe_load(config_part)
    assert resolved["algorithm"]["kl_coef"] == 0.04  # from the grpo preset
    # 6 prompts × 4 = 24 sequences; / 2 mini-batches = 12; ceil(12 / 5) = 3 micro-batches
    assert "6 prompts × 4 samples = 24" in plan
    assert "24 / 2 mini-batches = 12 sequences" in plan
    assert "3 of ≤5 per optimizer step (the last has 2)" in plan
    assert "1 epochs × 2 = 2 per training step; 3 steps" in plan
    # in flight: 6 × (1 + 1) = 12 groups, one version of staleness allowed
    assert "≤12 (6 × (1 + 1)); max_staleness=1: off-policy by at most 1 versions" in plan
    assert "reference              ×1" in plan and "critic                 off" in plan
    assert "warning: model.path=/nonexistent/model does not exist" in err


def test_overrides_apply_before_or_after_flags(capsys, config_file):
    rc, out, _ = run_cli(
        capsys,
        "train",
        config_file,
        "learner.prompts_per_step=2",
        "--dry-run",
        "algorithm.kl_coef=0",
        "reference.enabled=auto",
    )
    assert rc == 0
    resolved = yaml.safe_load(out.split("---\n")[0])
    assert resolved["learner"]["prompts_per_step"] == 2 and resolved["algorithm"]["kl_coef"] == 0
    assert "2 prompts × 4 samples = 8" in out
    assert "reference              off" in out


def test_ppo_shows_critic_and_reference(capsys, config_file):
    rc, out, _ = run_cli(capsys, "train", config_file, "algorithm.preset=ppo", "--dry-run")
    assert rc == 0
    assert "critic                 on" in out and "reference              ×1" in out


def test_the_dry_run_names_the_environment_service(capsys, config_file):
    """An agent run's services include its environment: launched replicas, or an address."""
    env = "environment={name: tool_arith, builtin: tool_arith, replicas: 2}"
    rc, out, _ = run_cli(capsys, "train", config_file, env, "--dry-run")
    assert rc == 0 and "environment            ×2: tool_arith (built-in tool_arith)" in out
    rc, out, _ = run_cli(capsys, "train", config_file, "environment={name: mine, address: 'h:50090'}", "--dry-run")
    assert rc == 0 and "environment            at h:50090 (not launched): mine (your service)" in out


@pytest.mark.parametrize(
    "override, named",
    [
        ("trainer.mini_batches=5", "not divisible by trainer.mini_batches=5"),  # 24 % 5
        ("trainer.nope=1", "trainer.nope: unknown key"),
        ("trainer.micro_batch_size=zero", "trainer.micro_batch_size"),
        ("learner.max_groups_in_flight=3", "learner.max_groups_in_flight=3 is below"),
        ("algorithm.preset=nosuch", "algorithm.preset='nosuch' is not a known preset"),
    ],
)
def test_bad_config_exits_2_naming_the_key(capsys, config_file, override, named):
    rc, out, err = run_cli(capsys, "train", config_file, override, "--dry-run")
    assert rc == 2 and out == ""
    assert err.startswith("meshrl: error:") and named in err
    assert "Traceback" not in err


def test_missing_config_file_exits_2(capsys, tmp_path):
    rc, _, err = run_cli(capsys, "train", tmp_path / "nope.yaml", "--dry-run")
    assert rc == 2 and "nope.yaml does not exist" in err


def test_train_without_dry_run_checks_inputs_first(capsys, config_file):
    rc, _, err = run_cli(capsys, "train", config_file)
    assert rc == 2
    assert "model.path=/nonexistent/model does not exist" in err
    assert "meshrl models fetch-smollm2" in err
    assert "data.train=/nonexistent/train.jsonl does not exist" in err


def test_serve_unknown_service_lists_the_known_ones(capsys, config_file):
    rc, _, err = run_cli(capsys, "serve", "bogus", "--nats", "nats://x:4222", "--run-id", "r", "--config", config_file)
    assert rc == 2
    assert (
        "unknown service 'bogus'; known services: learner, rollout, reward, reference, reward_model, environment" in err
    )


def test_serve_needs_its_flags(capsys):
    rc, _, err = run_cli(capsys, "serve", "reward")
    assert rc == 2 and "needs --nats --run-id --config" in err


def test_serve_builds_the_service_command(config_file):
    from meshrl.cli.main import parse
    from meshrl.cli.serve import command

    args = parse(
        [
            "serve",
            "reference",
            "--nats",
            "nats://h:4222",
            "--run-id",
            "r1",
            "--config",
            str(config_file),
            "--replica-id",
            "reference-2",
        ]
    )
    assert command(args) == [
        sys.executable,
        "-m",
        "meshrl.services.reference",
        "--nats",
        "nats://h:4222",
        "--run-id",
        "r1",
        "--config",
        str(config_file),
        "--replica-id",
        "reference-2",
    ]
    assert (
        SERVICES
        == tuple(topology.KINDS)
        == ("learner", "rollout", "reward", "reference", "reward_model", "environment")
    )


def test_cli_does_not_import_services_or_torch():
    code = (
        "import sys; from meshrl.cli.main import main, build_parser; build_parser(); "
        "bad = [m for m in sys.modules if m.startswith('meshrl.services.') or m == 'torch']; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_console_entry_point_exits_2_without_traceback(config_file):
    proc = subprocess.run(
        [sys.executable, "-m", "meshrl.cli.main", "train", str(config_file), "trainer.mini_batches=7", "--dry-run"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "not divisible by trainer.mini_batches=7" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_serve_execs_the_service_module(tmp_path):
    """`meshrl serve reference` becomes `python -m meshrl.services.reference` (same pid, its
    own exit status): here the service itself rejects a missing model with exit 2."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({"model": {"path": str(tmp_path / "no-model")}, "data": {"train": "x.jsonl"}}))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "serve",
            "reference",
            "--nats",
            "nats://127.0.0.1:1",
            "--run-id",
            "r",
            "--config",
            str(cfg),
            "--replica-id",
            "reference-0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("reference service:") and "no-model does not exist" in proc.stderr


def test_plot_is_a_subcommand(capsys, tmp_path):
    rc = main(["plot", str(tmp_path / "no-run")])
    assert rc == 2 and capsys.readouterr().err.startswith("meshrl: error:")


def test_resume_takes_overrides_without_a_config_file(capsys, config_file, tmp_path):
    """`meshrl train --resume RUN key=value` (the README's form): the override is not a CONFIG."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(config_file.read_text())
    rc, out, err = run_cli(capsys, "train", "--resume", run_dir, "learner.steps=6", "--dry-run")
    assert rc == 0, err
    assert yaml.safe_load(out.split("---\n")[0])["learner"]["steps"] == 6


@pytest.mark.parametrize("left_behind", ["config.yaml", "metrics.jsonl", "groups.jsonl"])
def test_train_refuses_a_run_dir_holding_a_previous_run(capsys, tmp_path, left_behind):
    model, data = tmp_path / "model", tmp_path / "train.jsonl"  # inputs that pass the input check
    model.mkdir()
    (model / "config.json").write_text('{"max_position_embeddings": 2048}')
    (model / "model.safetensors").write_bytes(b"")
    data.write_text('{"prompt": "1+1=", "answer": "2"}\n')
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({**SAMPLE, "model": {"path": str(model)}, "data": {"train": str(data)}}))
    run_dir = tmp_path / "old"
    run_dir.mkdir()
    (run_dir / left_behind).write_text("")  # a run that failed before its first checkpoint
    rc, _, err = run_cli(capsys, "train", config, "--run-dir", run_dir)
    assert rc == 2 and f"run dir {run_dir} already holds a run ({left_behind})" in err
    assert f"meshrl train --resume {run_dir}" in err and "run.dir=NEW_DIR" in err
    assert (run_dir / left_behind).read_text() == "" and sorted(p.name for p in run_dir.iterdir()) == [left_behind]


def test_a_tracker_token_in_a_uri_is_never_printed(capsys, config_file):
    """`?token=` in an MLflow URI: refused naming the parameter; the value is in no output
    (--dry-run would print the URI, and RUN_DIR/config.yaml would keep it)."""
    secret = "tok-5e1f0c2d9a"
    for uri in (f"http://mlflow:5000/?token={secret}", f"http://mlflow:99999/?access_token={secret}"):
        rc = main(["train", str(config_file), f"telemetry.mlflow.tracking_uri={uri}", "--dry-run"])
        out = capsys.readouterr()
        assert rc == 2 and "in its query string" in out.err and out.err.count("\n") == 1, out.err
        assert secret not in out.out + out.err
