"""Reward service fixtures: the example external reward service as a real process."""

import sys
from pathlib import Path

import pytest

from tests.fixtures.served import served_on_any_port

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "external_reward" / "server.py"


@pytest.fixture(scope="session")
def example_reward_address():
    """host:port of examples/external_reward/server.py (keywords answer,because; max 20 chars)."""
    cmd = [sys.executable, str(EXAMPLE), "--port", "0", "--keywords", "answer,because", "--max-chars", "20"]
    with served_on_any_port(cmd, r"on port (\d+) ") as address:  # its log line, once it listens
        yield address
