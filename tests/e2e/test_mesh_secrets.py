"""No secret reaches a run's files: planted tokens (an external reward service's bearer token
and the alert webhook's, both from environment variables) and the run's own NATS passwords
and gRPC TLS keys (made for RUN_DIR/secrets) appear in no file of the run dir outside
secrets/, no log and no span. The run has `launch.grpc_tls: mutual`: it trains over mutual
TLS (learner→reference, eval, control), and the learner's port refuses a plaintext client."""

import asyncio
import os
import socket
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.launch.secrets import KINDS
from meshrl.run.secrets import grpc_user_env
from meshrl.transport.rpc import mesh_tls
from tests.fixtures.served import served_on_any_port

pytestmark = pytest.mark.slow
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "external_reward" / "server.py"
REWARD_TOKEN, HOOK_TOKEN = "planted-reward-token-5f0c2a", "planted-hook-token-9b41e7"


def record_new_passwords(monkeypatch) -> list[str]:
    """Every NATS password the launcher makes for the run (RUN_DIR/secrets is removed when
    the run's NATS stops, so they are recorded as they are made)."""
    from meshrl.transport.bus import credentials, run_auth

    made = []

    def recorded() -> str:
        made.append(credentials.new_password())
        return made[-1]

    monkeypatch.setattr(run_auth, "new_password", recorded)
    return made


async def health(address: str, credentials) -> str:
    """One grpc.health.v1 check over TLS (`credentials`) or plaintext (None): its status or error code."""
    channel = (
        grpc.aio.secure_channel(address, credentials) if credentials is not None else grpc.aio.insecure_channel(address)
    )
    async with channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
        except grpc.aio.AioRpcError as err:
            return err.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def probe_learner_port(run_dir: Path, found: dict, done: threading.Event) -> None:
    """While the run lives: once the learner's control port answers the admin's TLS files,
    ask it in plaintext too; keep the run's gRPC private keys to look for later."""
    while not done.is_set() and "plaintext" not in found:
        env = grpc_user_env(run_dir / "secrets", "admin")
        if env and (run_dir / "config.yaml").is_file():
            port = yaml.safe_load((run_dir / "config.yaml").read_text())["learner"]["grpc_port"]
            address = f"127.0.0.1:{port}"
            found["keys"] = [p.read_text() for p in (run_dir / "secrets").glob("grpc-*-tls.key")]
            if asyncio.run(health(address, mesh_tls.client_credentials(env))) == "SERVING":
                found["plaintext"] = asyncio.run(health(address, None))
        time.sleep(0.5)


def leaks(run_dir: Path, secrets: list[str]) -> list[str]:
    hits = []
    for path in run_dir.rglob("*"):
        if path.is_file() and "secrets" not in path.relative_to(run_dir).parts:
            text = path.read_bytes()
            hits += [f"{path.relative_to(run_dir)} holds {s[:6]}…" for s in secrets if s.encode() in text]
    return hits


def test_no_secret_reaches_the_run_files_logs_or_spans(run_mesh, tmp_path, monkeypatch):
    monkeypatch.setenv("MESHRL_TEST_REWARD_TOKEN", REWARD_TOKEN)
    monkeypatch.setenv("MESHRL_TEST_HOOK_TOKEN", HOOK_TOKEN)
    passwords = record_new_passwords(monkeypatch)
    found, done = {}, threading.Event()
    prober = threading.Thread(target=probe_learner_port, args=(tmp_path / "run", found, done), daemon=True)
    prober.start()
    judge_argv = [sys.executable, str(EXAMPLE), "--port", "0", "--keywords", "a"]  # it binds, then logs its port
    try:
        with served_on_any_port(judge_argv, r"on port (\d+) ") as judge, socket.socket() as hook:
            hook.bind(("127.0.0.1", 0))  # the webhook's port: held, never listening (nobody else's server)
            components = (
                '[{name: vowel, kind: regex, weight: 1.0, params: {pattern: "[aeiou]"}}, '
                f'{{name: judge, kind: external, address: "{judge}", weight: 0.5, '
                "token_env: MESHRL_TEST_REWARD_TOKEN}]"
            )
            hook_url = f"http://127.0.0.1:{hook.getsockname()[1]}/hook"
            result, metrics, _ = run_mesh(
                "learner.steps=1",
                "launch.grpc_tls=mutual",
                f"reward.components={components}",
                f"alerts.webhook={{url: '{hook_url}', token_env: MESHRL_TEST_HOOK_TOKEN}}",
            )
    finally:
        done.set()
    run_dir = tmp_path / "run"
    assert len(metrics) == 1
    assert len(passwords) >= 4, "the launcher made no NATS passwords to look for"
    assert (run_dir / "traces").is_dir() and list((run_dir / "logs").glob("*.log"))
    assert found.get("plaintext") == "UNAVAILABLE"  # the TLS-only port answered mutual TLS and refused plaintext
    assert len(found["keys"]) == len(KINDS)  # one per kind: learner, rollout, reward, reference, reward_model, admin
    assert leaks(run_dir, [REWARD_TOKEN, HOOK_TOKEN, *passwords, *found["keys"]]) == []
    assert not (run_dir / "secrets").exists()  # removed with the run's NATS
    assert os.environ["MESHRL_TEST_REWARD_TOKEN"] == REWARD_TOKEN  # planted, so the check meant something
