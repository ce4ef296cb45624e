"""deploy/image/entrypoint.sh, run on the host (images are not built here): with a FAKE
`meshrl` (and a FAKE `torchrun`) first on PATH that only record their argv, check the exact
`meshrl serve ...` command built from the MESHRL_* variables, and the error naming a
missing variable.

    .venv/bin/python -m pytest -q tests/deploy/test_entrypoint.py
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ENTRYPOINT = Path(__file__).resolve().parents[2] / "deploy" / "image" / "entrypoint.sh"
# A stand-in for a real program: writes its own name and argv as JSON, does nothing else.
FAKE = """#!/bin/sh
# FAKE {name} for tests/deploy/test_entrypoint.py: records its argv, runs nothing.
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' {name} "$@" >> "$FAKE_ARGV_LOG"
"""
ENV = {"MESHRL_NATS_URL": "nats://nats:4222", "MESHRL_RUN_ID": "grpo-1", "MESHRL_CONFIG": "/etc/meshrl/config.yaml"}


@pytest.fixture
def fakes(tmp_path):
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir()
    for name in ("meshrl", "torchrun"):
        (bin_dir / name).write_text(FAKE.format(name=name))
        (bin_dir / name).chmod(0o755)
    return bin_dir, tmp_path / "argv.log"


def run(fakes, args, env, extra_path: str = ""):
    bin_dir, log = fakes
    path = ":".join(p for p in (str(bin_dir), extra_path, "/usr/bin", "/bin") if p)
    full = {"PATH": path, "FAKE_ARGV_LOG": str(log), **env}
    done = subprocess.run([str(ENTRYPOINT), *args], env=full, capture_output=True, text=True, timeout=30)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def test_service_and_flags_become_meshrl_serve(fakes):
    done, calls = run(fakes, ["rollout", "--grpc-port", "50051"], {**ENV, "MESHRL_REPLICA_ID": "rollout-3"})
    assert done.returncode == 0, done.stderr
    assert calls == [
        [
            "meshrl",
            "serve",
            "rollout",
            "--nats",
            "nats://nats:4222",
            "--run-id",
            "grpo-1",
            "--config",
            "/etc/meshrl/config.yaml",
            "--replica-id",
            "rollout-3",
            "--grpc-port",
            "50051",
        ]
    ]


def test_replica_id_defaults_to_the_hostname(fakes):
    done, calls = run(fakes, ["reward"], {**ENV, "HOSTNAME": "reward-7f9c-abcde"})
    assert done.returncode == 0, done.stderr
    assert calls[0][-2:] == ["--replica-id", "reward-7f9c-abcde"]
    done, calls = run(fakes, ["reward"], ENV)  # no HOSTNAME variable: the hostname command
    assert calls[-1][-1] == subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()


def test_service_from_meshrl_service(fakes):
    done, calls = run(fakes, [], {**ENV, "MESHRL_SERVICE": "reference", "MESHRL_REPLICA_ID": "ref-a"})
    assert done.returncode == 0, done.stderr
    assert calls[0][:3] == ["meshrl", "serve", "reference"]


@pytest.mark.parametrize("missing", sorted(ENV))
def test_a_missing_variable_is_named_and_nothing_runs(fakes, missing):
    env = {k: v for k, v in ENV.items() if k != missing}
    done, calls = run(fakes, ["learner"], env)
    assert done.returncode == 2
    assert f"{missing} is not set" in done.stderr
    assert f"cannot start learner: missing {missing}" in done.stderr
    assert calls == []


def test_an_empty_variable_counts_as_missing_and_all_are_named(fakes):
    done, calls = run(fakes, ["rollout"], {"MESHRL_NATS_URL": ""})
    assert done.returncode == 2 and calls == []
    assert "missing MESHRL_NATS_URL MESHRL_RUN_ID MESHRL_CONFIG" in done.stderr


def test_no_or_unknown_service_is_refused(fakes):
    done, calls = run(fakes, [], ENV)
    assert done.returncode == 2 and "no service" in done.stderr and calls == []
    done, calls = run(fakes, [], {**ENV, "MESHRL_SERVICE": "rollot"})
    assert done.returncode == 2 and "unknown service 'rollot'" in done.stderr and calls == []
    done, calls = run(fakes, ["rolout", "--grpc-port", "50051"], ENV)  # a mistyped service as the command
    assert done.returncode == 2 and calls == []
    assert "'rolout' is no service and no command: services are rollout reward" in done.stderr


def test_any_other_command_runs_as_given(fakes):
    done, calls = run(fakes, ["meshrl", "health", "127.0.0.1:50051"], {})
    assert done.returncode == 0, done.stderr
    assert calls == [["meshrl", "health", "127.0.0.1:50051"]]


def test_learner_under_torchrun(fakes):
    torchrun = "--nnodes=2 --nproc-per-node=1 --node-rank=1 --master-addr=learner-0.learner --master-port=29500"
    done, calls = run(fakes, ["learner"], {**ENV, "MESHRL_REPLICA_ID": "learner-1", "MESHRL_TORCHRUN_ARGS": torchrun})
    assert done.returncode == 0, done.stderr
    assert calls == [
        [
            "torchrun",
            *torchrun.split(),
            "-m",
            "meshrl.cli.main",
            "serve",
            "learner",
            "--nats",
            "nats://nats:4222",
            "--run-id",
            "grpo-1",
            "--config",
            "/etc/meshrl/config.yaml",
            "--replica-id",
            "learner-1",
        ]
    ]
    # the module torchrun runs is the real CLI, and it parses what follows as `serve learner`
    from meshrl.cli.main import parse

    args = parse(calls[0][calls[0].index("serve") :])
    assert (args.service, args.nats, args.run_id, args.extra) == (
        "learner",
        "nats://nats:4222",
        "grpo-1",
        ["--replica-id", "learner-1"],
    )


def test_config_overrides_make_a_config_of_their_own(fakes, tmp_path):
    """MESHRL_CONFIG_OVERRIDES: the mounted config stays as it is; the service gets a config with
    the overrides applied (written to TMPDIR), so a short compose run needs no edit."""
    config = tmp_path / "config.yaml"
    config.write_text(
        "run: {name: c, dir: /runs/c}\nmodel: {path: tiny}\ndata: {train: t.jsonl}\nalgorithm: {preset: grpo}\n"
        "learner: {steps: 20}\n"
    )
    venv_bin = str(Path(sys.executable).parent)  # the image's python3 has meshrl: here the venv's
    env = {**ENV, "MESHRL_CONFIG": str(config), "TMPDIR": str(tmp_path), "MESHRL_REPLICA_ID": "learner-0"}
    env["MESHRL_CONFIG_OVERRIDES"] = "learner.steps=2 rollout.sampling.group_size=4"
    done, calls = run(fakes, ["learner"], env, extra_path=venv_bin)
    assert done.returncode == 0, done.stderr
    made = tmp_path / "meshrl-config.yaml"
    assert calls[0][calls[0].index("--config") + 1] == str(made)
    resolved = yaml.safe_load(made.read_text())
    assert resolved["learner"]["steps"] == 2 and resolved["rollout"]["sampling"]["group_size"] == 4
    assert "steps: 20" in config.read_text()  # the shared file is untouched


def test_a_bad_config_override_is_one_line_and_nothing_runs(fakes, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("run: {name: c, dir: /runs/c}\nmodel: {path: tiny}\ndata: {train: t.jsonl}\n")
    env = {**ENV, "MESHRL_CONFIG": str(config), "TMPDIR": str(tmp_path), "MESHRL_CONFIG_OVERRIDES": "learner.stepz=2"}
    done, calls = run(fakes, ["learner"], env, extra_path=str(Path(sys.executable).parent))
    assert done.returncode == 2 and calls == []
    assert done.stderr.startswith("meshrl entrypoint: MESHRL_CONFIG_OVERRIDES:") and "stepz" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_the_services(fakes, flag):
    done, calls = run(fakes, [flag], {})  # no variable needed to ask
    assert done.returncode == 0 and calls == [] and done.stderr == ""
    assert done.stdout.startswith("deploy/image/entrypoint.sh: the meshrl image's entrypoint")
    assert "set -eu" not in done.stdout and "services: rollout reward" in done.stdout
