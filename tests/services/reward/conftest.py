"""Reward service fixtures: the example external reward service as a real process."""

import sys
from pathlib import Path

import pytest

from meshrl.addresses import free_port
from tests.fixtures.served import served

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "external_reward" / "server.py"


@pytest.fixture(scope="session")
def example_reward_address():
    """host:port of examples/external_reward/server.py (keywords answer,because; max 20 chars)."""
    port = free_port()
    cmd = [sys.executable, str(EXAMPLE), "--port", str(port), "--keywords", "answer,because", "--max-chars", "20"]
    with served(cmd, port) as address:
        yield address
