"""deploy/compose/check.py: a compose run's missing prerequisites are one line each with the
fix, exit 2 (a newcomer following the docs met them as podman errors, one by one); with
everything made as the docs say, "ready" and exit 0. The engine is a FAKE podman that knows
the images in $FAKE_IMAGES; NATS's registry is an address nothing answers on.

    .venv/bin/python -m pytest -q tests/deploy/test_compose_check.py
"""

import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.deploy.test_compose import COMPOSE_DIR

sys.path.insert(0, str(COMPOSE_DIR))
import check  # noqa: E402 - deploy/compose/check.py
import make_nats_auth  # noqa: E402 - deploy/compose/make_nats_auth.py

FAKE_ENGINE = """#!/bin/sh
# FAKE podman for tests/deploy/test_compose_check.py: `image inspect NAME` succeeds for $FAKE_IMAGES.
for known in $FAKE_IMAGES; do [ "$3" = "$known" ] && exit 0; done
exit 1
"""
NO_REGISTRY_NATS = "127.0.0.1:9/nats:2.11-alpine"  # port 9 (discard): nothing answers


@pytest.fixture
def setup(tmp_path):
    compose_dir = tmp_path / "compose"
    compose_dir.mkdir()
    for name in ("compose.yaml", "run-config.yaml"):
        shutil.copy(COMPOSE_DIR / name, compose_dir / name)
    engine = tmp_path / "podman"
    engine.write_text(FAKE_ENGINE)
    engine.chmod(0o755)
    return compose_dir, engine, tmp_path / "data"


def run_check(setup, capsys, **env) -> tuple[int, list[str]]:
    """check.main with compose's variables in `env`; the fake engine reads FAKE_IMAGES (monkeypatch)."""
    compose_dir, engine, data = setup
    full = {"MESHRL_DATA_DIR": str(data), "MESHRL_NATS_IMAGE": NO_REGISTRY_NATS, **env}
    code = check.main(["--engine", str(engine), "--compose-dir", str(compose_dir)], env=full)
    out = capsys.readouterr()
    return code, (out.err or out.out).strip().splitlines()


def test_a_bare_checkout_names_every_missing_prerequisite_with_its_fix(setup, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_IMAGES", "")
    code, lines = run_check(setup, capsys)
    assert code == 2 and all(line.startswith("compose check: ") for line in lines)
    text = "\n".join(lines)
    [secrets] = [line for line in lines if "secrets missing" in line]  # one line for all, the tokens too
    assert "gateway-tokens" in secrets and "checkpoint-key" in secrets and "nats-learner" in secrets
    assert secrets.endswith(f"run `{check.MAKE_FILES}` (it makes them all)")
    assert "meshrl models fetch-smollm2 --cache-dir" in text and "meshrl data arithmetic --out" in text
    assert "image meshrl:cpu is not here: build it with `bash deploy/image/build.sh --variant cpu" in text
    assert f"NATS image {NO_REGISTRY_NATS} is not here and 127.0.0.1:9 cannot be reached" in text
    assert "set MESHRL_NATS_IMAGE=meshrl:cpu" in text


def test_made_as_the_docs_say_it_is_ready(setup, capsys, monkeypatch):
    compose_dir, _, data = setup
    monkeypatch.setenv("FAKE_IMAGES", "meshrl:cpu")
    assert make_nats_auth.main(["--out", str(compose_dir / "nats-auth"), "--run-id", "grpo-smollm2"]) == 0
    capsys.readouterr()
    (data / "models" / "SmolLM2-135M-Instruct").mkdir(parents=True)
    (data / "arith_train.jsonl").write_text("{}\n")
    code, lines = run_check(
        setup, capsys, MESHRL_NATS_IMAGE="meshrl:cpu", MESHRL_CONFIG_OVERRIDES="learner.steps=2 eval.every=1"
    )
    assert code == 0, lines
    assert lines[-1].startswith(f"ready: MESHRL_DATA_DIR={Path(data).resolve()} ")
    # the line is copied into other shells: what compose reads from this one goes with it
    assert "MESHRL_CONFIG_OVERRIDES='learner.steps=2 eval.every=1' MESHRL_NATS_IMAGE=meshrl:cpu " in lines[-1]


@pytest.mark.skipif(os.geteuid() != 0, reason="owners are checked as root only")
def test_a_secret_the_images_user_cannot_read_is_named(setup, capsys, monkeypatch):
    compose_dir, _, _ = setup
    monkeypatch.setenv("FAKE_IMAGES", "meshrl:cpu")
    assert make_nats_auth.main(["--out", str(compose_dir / "nats-auth"), "--run-id", "grpo-smollm2"]) == 0
    key = compose_dir / "checkpoint-key" / "checkpoint-signing.key"
    os.chown(key, 0, 0)  # what the script wrote before it handed files over
    capsys.readouterr()
    _, lines = run_check(setup, capsys, MESHRL_NATS_IMAGE="meshrl:cpu")
    assert [line for line in lines if "secret " in line] == [
        f"compose check: secret checkpoint-key: {key} is not readable by the image's uid 10001: "
        f"run `{check.MAKE_FILES}` again (it hands the files over), or `chown 10001 {key}`"
    ]
