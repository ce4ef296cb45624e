"""NATS over TLS against a real nats-server: TLS and mutual TLS accept a client with the right
files and refuse a plaintext client, a client without a certificate, and a TLS client whose
server does not require TLS (no silent plaintext).

    .venv/bin/python -m pytest -q tests/services/transport/bus/test_nats_tls.py
"""

import json

import pytest

from meshrl.transport.bus import Bus, BusUnavailable, EmbeddedNats
from meshrl.transport.bus.tls import CA_ENV, CERT_ENV, KEY_ENV, TlsConfigError, TlsFiles, server_block, tls_from_env
from tests.fixtures.tls_certs import make_certs


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def _server(tmp_path_factory, certs, *, verify: bool) -> EmbeddedNats:
    block = server_block(certs.server_cert, certs.server_key, certs.ca, verify=verify)
    return EmbeddedNats(tmp_path_factory.mktemp("nats-tls"), tls=block)


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory, certs):
    with _server(tmp_path_factory, certs, verify=False) as server:
        yield server


@pytest.fixture(scope="module")
def mtls_server(tmp_path_factory, certs):
    with _server(tmp_path_factory, certs, verify=True) as server:
        yield server


async def _roundtrip(url: str, tls: TlsFiles | None) -> str:
    bus = await Bus.connect(url, "ttls", name="tls-test", timeout=3, tls=tls)
    try:
        await bus.ensure_streams()
        await bus.state.put("probe", {"tls": True})
        return json.loads((await bus.state.get("probe")).value)["tls"]
    finally:
        await bus.close()


async def test_tls_client_with_the_ca_works(tls_server, certs):
    assert await _roundtrip(tls_server.url, TlsFiles(str(certs.ca))) is True


async def test_plaintext_client_is_refused(tls_server, monkeypatch):
    monkeypatch.delenv(CA_ENV, raising=False)
    with pytest.raises(BusUnavailable):
        await Bus.connect(tls_server.url, "ttls", name="plain", timeout=2)


async def test_mutual_tls_with_client_cert_works_from_env(mtls_server, certs, monkeypatch):
    for name, path in ((CA_ENV, certs.ca), (CERT_ENV, certs.client_cert), (KEY_ENV, certs.client_key)):
        monkeypatch.setenv(name, str(path))
    assert await _roundtrip(mtls_server.url, None) is True


async def test_mutual_tls_without_client_cert_is_refused(mtls_server, certs):
    with pytest.raises(BusUnavailable):
        await Bus.connect(mtls_server.url, "ttls", name="nocert", timeout=2, tls=TlsFiles(str(certs.ca)))


async def test_tls_client_refuses_a_plaintext_server(nats_url, certs):
    with pytest.raises(BusUnavailable, match="does not require TLS"):
        await Bus.connect(nats_url, "ttls", name="downgrade", timeout=2, tls=TlsFiles(str(certs.ca)))


def test_env_errors_name_the_variable(tmp_path):
    assert tls_from_env({}) is None
    with pytest.raises(TlsConfigError, match=CA_ENV):
        tls_from_env({CERT_ENV: "c.pem", KEY_ENV: "c.key"})
    with pytest.raises(TlsConfigError, match=KEY_ENV):
        tls_from_env({CA_ENV: "ca.pem", CERT_ENV: "c.pem"})
    with pytest.raises(TlsConfigError, match="missing.pem"):
        TlsFiles(str(tmp_path / "missing.pem")).context()
