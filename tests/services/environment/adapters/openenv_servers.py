"""Test helpers: a real OpenEnv server (openenv_guess_server.py, in the openenv adapter venv) on the
port it binds and announces, and meshrl's environment service serving it through the adapter (the mesh's
process contract, on real NATS), each a real process stopped at the end."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

from meshrl.transport.http_health import http_health
from tests.fixtures.served import announced_port

SERVER = str(Path(__file__).with_name("openenv_guess_server.py"))
LISTENING = r"^listening on 127\.0\.0\.1:(\d+)$"  # openenv_guess_server.py's line once it has bound its port
START_S = 240  # importing openenv (fastapi, gradio, fastmcp) takes a while on a busy 2-core host


@contextlib.contextmanager
def guess_server(python: str, malformed: bool = False) -> Iterator[tuple[subprocess.Popen, str]]:
    """(the server process, its url) once it answers GET /health; killed at the end."""
    proc = subprocess.Popen(
        [python, SERVER, "--port", "0", *(["--malformed"] if malformed else [])],  # it binds, then says where
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + START_S
        url = f"http://127.0.0.1:{announced_port(proc, LISTENING, START_S)}"
        while http_health(url, timeout_s=2.0):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the OpenEnv test server at {url} did not start (exit code {proc.poll()})")
            time.sleep(0.5)
        yield proc, url
    finally:
        proc.kill()
        proc.wait()


def environment_service(nats_url: str, run_id: str, config: str, env: dict | None = None) -> subprocess.Popen:
    argv = ["--nats", nats_url, "--run-id", run_id, "--config", config, "--replica-id", "environment-0"]
    return subprocess.Popen(
        [sys.executable, "-m", "meshrl.services.environment", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
