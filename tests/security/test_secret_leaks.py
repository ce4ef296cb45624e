"""A secret put where the config or a command line would show it is refused, never echoed.

`nats.url: nats://user:password@host` went onto every service's command line (readable by
every local user in `ps`), into `--dry-run` and RUN_DIR/config.yaml; a token pasted into a
reward component's (or the environment's) `token_env` was accepted and printed back. Through
the real CLI (`meshrl train --dry-run`, `meshrl serve`): exit 2, one line naming the key and
the fix, and the secret appears nowhere in the output.

Run: .venv/bin/python -m pytest tests/security/test_secret_leaks.py -q
"""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo_smollm2.yaml"
SECRET = "hunter2-s3cret-7f3a9c"


def meshrl(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meshrl.cli.main", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "override,key",
    [
        (f"nats.url=nats://meshrl:{SECRET}@10.0.0.7:4222", "nats.url"),
        (f"nats.url=nats://a:4222,nats://meshrl:{SECRET}@b:4222", "nats.url"),
        (f"telemetry.otlp_endpoint=http://otel:{SECRET}@collector:4317", "telemetry.otlp_endpoint"),
        (f"alerts.webhook={{url: 'https://hooks:{SECRET}@example.com/x'}}", "alerts.webhook.url"),
        (f"reward.components=[{{name: judge, kind: external, address: 'h:1', token_env: 'sk-{SECRET}'}}]", "token_env"),
    ],
)
def test_a_secret_in_the_config_is_refused_and_not_printed(override, key):
    done = meshrl("train", str(EXAMPLE), "--dry-run", override, "eval.correct_component=null")
    assert done.returncode == 2, done.stdout + done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert key in done.stderr and (
        "must not hold credentials" in done.stderr or "NAME of an environment" in done.stderr
    )


def test_a_service_is_not_started_with_credentials_on_its_command_line():
    done = meshrl(
        "serve",
        "rollout",
        "--nats",
        f"nats://meshrl:{SECRET}@127.0.0.1:4222",
        "--run-id",
        "r",
        "--config",
        str(EXAMPLE),
    )
    assert done.returncode == 2 and SECRET not in done.stdout + done.stderr
    assert "argument --nats: must not hold credentials" in done.stderr
