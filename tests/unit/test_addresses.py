"""Bind and advertise hosts come from MESHRL_BIND_HOST / MESHRL_ADVERTISE_HOST: a server bound
to 127.0.0.2 answers there and not on 127.0.0.1 (both loopback on Linux, so this needs no
network namespace)."""

import socket

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from meshrl.addresses import AddressError, advertise_host, bind_host, host_port
from meshrl.transport.rpc import start_server, stop_server


def test_defaults_are_loopback(monkeypatch):
    monkeypatch.delenv("MESHRL_BIND_HOST", raising=False)
    monkeypatch.delenv("MESHRL_ADVERTISE_HOST", raising=False)
    assert (bind_host(), advertise_host()) == ("127.0.0.1", "127.0.0.1")


def test_binding_every_interface_needs_an_advertised_address(monkeypatch):
    monkeypatch.setenv("MESHRL_BIND_HOST", "0.0.0.0")
    monkeypatch.delenv("MESHRL_ADVERTISE_HOST", raising=False)
    with pytest.raises(AddressError, match="set MESHRL_ADVERTISE_HOST to this host's reachable address"):
        advertise_host()
    monkeypatch.setenv("MESHRL_ADVERTISE_HOST", "10.1.2.3")
    assert advertise_host() == "10.1.2.3"
    monkeypatch.setenv("MESHRL_ADVERTISE_HOST", "@ip")
    assert advertise_host() == socket.gethostbyname(socket.gethostname())


def test_host_port_brackets_ipv6():
    assert host_port("::1", 5) == "[::1]:5" and host_port("10.0.0.1", 5) == "10.0.0.1:5"


async def health_of(address: str) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except grpc.aio.AioRpcError as err:
            return err.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


async def test_a_server_listens_on_the_bind_host_only(monkeypatch):
    monkeypatch.setenv("MESHRL_BIND_HOST", "127.0.0.2")
    server, port = await start_server([])
    try:
        assert await health_of(f"127.0.0.2:{port}") == "SERVING"
        assert await health_of(f"127.0.0.1:{port}") == "UNAVAILABLE"
    finally:
        await stop_server(server, grace=0)


def test_the_metrics_endpoint_listens_on_the_bind_host_and_names_the_advertised_one(monkeypatch):
    import urllib.request

    from meshrl.telemetry.metrics import start_metrics

    monkeypatch.setenv("MESHRL_BIND_HOST", "127.0.0.2")
    monkeypatch.setenv("MESHRL_ADVERTISE_HOST", "127.0.0.2")
    handle = start_metrics("demo", "0", "run-a")
    try:
        assert handle.url == f"http://127.0.0.2:{handle.port}/metrics"
        assert b"process_cpu_seconds_total" in urllib.request.urlopen(handle.url, timeout=5).read()
        with pytest.raises(OSError):
            urllib.request.urlopen(f"http://127.0.0.1:{handle.port}/metrics", timeout=5)
    finally:
        handle.close()
