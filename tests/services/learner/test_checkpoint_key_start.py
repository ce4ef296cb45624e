"""The learner refuses to start with a checkpoint key it could not sign with: one line on
stderr naming the file and the fix, exit 2, before NATS or the model (the attack: compose's
key left 0600 to root while the learner runs as uid 10001 failed the end-of-run save, after
the training). The learner runs as a real process under a user that cannot read the key:
as root, root without CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH (setpriv) and the key another
uid's; otherwise the key chmod 000.

    .venv/bin/python -m pytest -q tests/services/learner/test_checkpoint_key_start.py
"""

import os
import shutil
import subprocess
import sys

import pytest

from meshrl.inputs.checkpoint.key import KEY_ENV, key_pair
from tests.fixtures.run_config import write_config

pytestmark = pytest.mark.timeout(120)
NO_NATS = "nats://127.0.0.1:1"  # nothing listens: a learner past the key check fails on NATS instead
OTHER_UID = 10001  # the image's user: anyone but this process


def start_learner(config: str, key, *, unprivileged: bool) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "meshrl.services.learner", "--nats", NO_NATS, "--run-id", "r", "--config", config]
    if unprivileged and os.geteuid() == 0:
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps", "-all", *argv]
    env = {**os.environ, KEY_ENV: str(key)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=90)


def make_unreadable(path) -> None:
    if os.geteuid() == 0:
        os.chown(path, OTHER_UID, OTHER_UID)  # 0600, another user's: root without DAC caps cannot read it
    else:
        path.chmod(0o000)


@pytest.fixture
def config(tmp_path):
    return write_config(tmp_path, nats={"connect_timeout_s": 1})


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="needs setpriv to drop root's DAC caps")
def test_a_key_the_learner_cannot_read_stops_it_at_start_naming_the_file_and_the_fix(config, tmp_path):
    private, _ = key_pair(tmp_path / "keys" / "checkpoint-signing.key")
    make_unreadable(private)
    done = start_learner(config, private, unprivileged=True)
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(
        f"learner service: {KEY_ENV}={private}: cannot read the checkpoint key as uid {os.geteuid()}"
    )
    assert "chown" in line and "make_nats_auth.py" in line
    assert "Traceback" not in done.stderr


def test_the_gateways_public_key_is_refused_and_a_readable_private_key_passes(config, tmp_path):
    private, public = key_pair(tmp_path / "keys" / "checkpoint-signing.key")
    refused = start_learner(config, public, unprivileged=False)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines()[-1] == (
        f"learner service: {KEY_ENV}={public} holds a public key, which only verifies; "
        "the learner needs the private key file"
    )
    passed = start_learner(config, private, unprivileged=False)  # on to NATS, which is not there
    assert passed.returncode == 2 and KEY_ENV not in passed.stderr.strip().splitlines()[-1]
