"""Reward service fixtures: the example external reward service as a real process."""
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from meshrl.transport.ports import free_port

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "external_reward" / "server.py"


def wait_port(port: int, proc: subprocess.Popen, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"example reward server exited with {proc.returncode}: {proc.stderr.read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"example reward server did not listen on {port} within {within_s}s")


@pytest.fixture(scope="session")
def example_reward_address():
    """host:port of examples/external_reward/server.py (keywords answer,because; max 20 chars)."""
    port = free_port()
    cmd = [sys.executable, str(EXAMPLE), "--port", str(port), "--keywords", "answer,because", "--max-chars", "20"]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        wait_port(port, proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
