"""Attacks on a real gateway (gRPC and HTTP on real ports) over a runs root with a live run.

- an anonymous gRPC call whose message is not even protobuf is refused before it is read,
  and a token holder's request is capped at 1 MiB (main parsed 64 MiB messages first);
- a page on another origin of this host posts with the dashboard's cookie (SameSite=Strict
  does not separate ports of one host): refused, while the gateway's own page still acts;
- ScaleService asked for 2,147,483,647 replicas: refused with the cap config and CLI use;
- a viewer opening live streams without end: the ninth is refused (429), others still get theirs;
- the dashboard's cookie: a random session id (never the token), Secure behind TLS, refused
  after logout, refused by another gateway instance (and the token itself as a cookie is no
  session); every answer carries a CSP and X-Frame-Options: DENY.

Run: .venv/bin/python -m pytest tests/security/test_gateway_attacks.py -q
"""

from __future__ import annotations

import asyncio
import json
import os
import socket

import aiohttp
import grpc
import pytest
import pytest_asyncio

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.gateway.auth.sessions import COOKIE
from meshrl.gateway.limits import MAX_FOLLOWS_PER_USER
from meshrl.run.presence import LauncherInfo, launch_lock, write_presence
from tests.fixtures.gateway import gateway_for

OPERATOR, VIEWER, OTHER_VIEWER = "operator-token-0123456789", "viewer-token-0123456789ab", "viewer2-token-0123456789"
pytestmark = pytest.mark.asyncio(loop_scope="session")


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def gateway(tmp_path_factory):
    """(gateway, gRPC stub, HTTP session, run dir) over one live run (its launcher: this process)."""
    root = tmp_path_factory.mktemp("runs")
    run_dir = root / "live"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("run: {name: live}\n")
    (run_dir / "metrics.jsonl").write_text(json.dumps({"step": 0, "reward": 0.1}) + "\n")
    nats, learner = listener(), listener()  # this process is the run's launcher: its ports are its own
    write_presence(
        run_dir,
        LauncherInfo(
            os.getpid(),
            "live-1",
            f"nats://127.0.0.1:{nats.getsockname()[1]}",
            f"127.0.0.1:{learner.getsockname()[1]}",
            {"rollout": 1},
        ),
    )
    lock = launch_lock(run_dir)
    lock.__enter__()
    gw = await gateway_for(
        root, root.parent, olga=("operator", OPERATOR), vic=("viewer", VIEWER), val=("viewer", OTHER_VIEWER)
    )
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}")
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}") as http:
        yield gw, gateway_pb2_grpc.GatewayServiceStub(channel), http, run_dir
    await channel.close()
    await gw.stop()
    lock.__exit__(None, None, None)


def listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def bearer(token: str):
    return (("authorization", f"Bearer {token}"),)


async def test_an_anonymous_call_is_refused_before_its_message_is_read(gateway):
    gw, stub, _, _ = gateway
    async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
        raw = channel.unary_unary("/meshrl.gateway.v1.GatewayService/SubmitRun")  # bytes in, bytes out
        with pytest.raises(grpc.aio.AioRpcError) as anonymous:
            await raw(b"\xff" * 1000, metadata=bearer("not-a-token-of-ours"), timeout=10)
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED  # not a parse error: never parsed
    with pytest.raises(grpc.aio.AioRpcError) as too_big:
        await stub.ScaleService(
            pb.ScaleServiceRequest(run="live", service="x" * (2 << 20), replicas=1),
            metadata=bearer(OPERATOR),
            timeout=10,
        )
    assert too_big.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_a_cookie_post_from_another_origin_is_refused(gateway):
    gw, _, http, run_dir = gateway
    jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP host, as a browser does
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}", cookie_jar=jar) as browser:
        async with browser.post(
            "/api/session", json={"token": OPERATOR}, headers={"Origin": f"http://127.0.0.1:{gw.http_port}"}
        ) as r:
            assert r.status == 200  # the operator logged in on the dashboard: the cookie is set
        evil = {"Origin": "http://127.0.0.1:9999"}  # another app on this host: same site, other origin
        async with browser.post("/api/runs/live/scale", json={"service": "rollout", "replicas": 5}, headers=evil) as r:
            assert r.status == 403 and "acts only for its own pages" in (await r.json())["error"]
        assert not (run_dir / "scale.json").exists()
        own = {"Origin": f"http://127.0.0.1:{gw.http_port}"}
        async with browser.post("/api/runs/live/scale", json={"service": "rollout", "replicas": 2}, headers=own) as r:
            assert r.status == 200
    assert json.loads((run_dir / "scale.json").read_text()) == {"rollout": 2}


async def test_a_cookie_post_with_a_non_bearer_authorization_header_is_refused(gateway):
    """A browser may attach an Authorization header of its own (Basic auth to a proxy in front):
    it skipped the origin check, and the request was then authorised by the cookie. Only a
    bearer token skips the check, and a request carrying any Authorization header is judged by
    it alone (found by an independent re-audit)."""
    gw, _, _, run_dir = gateway
    jar = aiohttp.CookieJar(unsafe=True)
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}", cookie_jar=jar) as browser:
        await login(browser, gw.http_port, OPERATOR)
        before = (run_dir / "scale.json").read_text() if (run_dir / "scale.json").exists() else None
        for header in ("Basic eDp5", "Bearer", "Bearer "):
            body = {"service": "rollout", "replicas": 3}
            async with browser.post("/api/runs/live/scale", json=body, headers={"Authorization": header}) as r:
                assert r.status in (401, 403), (header, r.status)
        after = (run_dir / "scale.json").read_text() if (run_dir / "scale.json").exists() else None
    assert after == before


async def test_scale_asks_for_at_most_the_cap(gateway):
    _, stub, _, _ = gateway
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.ScaleService(
            pb.ScaleServiceRequest(run="live", service="rollout", replicas=2_147_483_647),
            metadata=bearer(OPERATOR),
            timeout=10,
        )
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "replicas=2147483647: allowed 1..64" in refused.value.details()


async def test_one_viewer_cannot_hold_streams_without_end(gateway):
    _, _, http, _ = gateway
    opened = []
    try:
        for _ in range(MAX_FOLLOWS_PER_USER):
            opened.append(
                await http.get("/api/runs/live/metrics?follow=1", headers={"Authorization": f"Bearer {VIEWER}"})
            )
            assert opened[-1].status == 200
        async with http.get("/api/runs/live/metrics?follow=1", headers={"Authorization": f"Bearer {VIEWER}"}) as r:
            assert r.status == 429 and f"vic has {MAX_FOLLOWS_PER_USER} live streams open" in (await r.json())["error"]
        async with http.get(
            "/api/runs/live/metrics?follow=1", headers={"Authorization": f"Bearer {OTHER_VIEWER}"}
        ) as r:
            assert r.status == 200  # another viewer is not starved
    finally:
        for response in opened:
            response.close()
    await asyncio.sleep(0.5)  # the server notices the closed streams and frees their slots


async def login(browser: aiohttp.ClientSession, port: int, token: str, **headers) -> aiohttp.ClientResponse:
    own = {"Origin": f"http://127.0.0.1:{port}", **headers}
    async with browser.post("/api/session", json={"token": token}, headers=own) as r:
        assert r.status == 200
        return r


def cookie_of(response: aiohttp.ClientResponse):
    return response.cookies[COOKIE]


async def test_the_cookie_is_a_session_id_not_the_token(gateway):
    gw, _, _, _ = gateway
    async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}") as browser:
        plain = cookie_of(await login(browser, gw.http_port, OPERATOR))
        proxied = cookie_of(await login(browser, gw.http_port, OPERATOR, **{"X-Forwarded-Proto": "https"}))
    assert OPERATOR not in plain.value and OPERATOR not in proxied.value and plain.value != proxied.value
    assert len(plain.value) >= 40  # 32 random bytes, base64url
    assert plain["httponly"] and plain["samesite"] == "Strict" and not plain["secure"]  # plain HTTP: no Secure
    assert proxied["httponly"] and proxied["samesite"] == "Strict" and proxied["secure"]  # behind TLS: Secure


async def test_a_cookie_is_refused_after_logout(gateway):
    gw, _, _, _ = gateway
    port = gw.http_port
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}", cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
        stolen = cookie_of(await login(browser, port, OPERATOR)).value  # a copy kept by whoever saw it
        async with browser.delete("/api/session", headers={"Origin": f"http://127.0.0.1:{port}"}) as r:
            assert r.status == 200
    async with aiohttp.ClientSession(f"http://127.0.0.1:{port}", cookies={COOKIE: stolen}) as thief:
        for path in ("/api/session", "/api/runs", "/api/runs/live/status"):
            async with thief.get(path) as r:
                assert r.status == 401, path


async def test_a_cookie_of_another_gateway_or_the_token_itself_is_refused(gateway, tmp_path):
    gw, _, _, _ = gateway
    other = await gateway_for(tmp_path, tmp_path, olga=("operator", OPERATOR))  # same tokens, another instance
    try:
        jar = aiohttp.CookieJar(unsafe=True)  # keeps cookies of an IP host, as a browser does
        async with aiohttp.ClientSession(f"http://127.0.0.1:{other.http_port}", cookie_jar=jar) as browser:
            foreign = cookie_of(await login(browser, other.http_port, OPERATOR)).value
            async with browser.get("/api/session") as r:
                assert r.status == 200  # good where it was issued
    finally:
        await other.stop()
    for value in (foreign, OPERATOR):  # OPERATOR: what the cookie used to hold
        async with aiohttp.ClientSession(f"http://127.0.0.1:{gw.http_port}", cookies={COOKIE: value}) as browser:
            async with browser.get("/api/runs") as r:
                assert r.status == 401


async def test_every_answer_forbids_framing_and_foreign_content(gateway):
    gw, _, http, _ = gateway
    viewer = {"Authorization": f"Bearer {VIEWER}"}
    paths = ["/", "/runs/live", "/static/common.js", "/api/runs", "/api/runs/live/metrics", "/no/such/page"]
    for path, headers in [*((p, viewer) for p in paths), ("/api/runs", {})]:  # the last: a 401
        async with http.get(path, headers=headers) as r:
            assert r.headers.get("X-Frame-Options") == "DENY", path
            csp = r.headers.get("Content-Security-Policy", "")
            assert {"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} <= set(csp.split("; ")), path
            assert r.headers.get("X-Content-Type-Options") == "nosniff", path
    operator = {"Authorization": f"Bearer {OPERATOR}"}  # the viewers' stream slots are another test's
    async with http.get("/api/runs/live/metrics?follow=1", headers=operator) as r:  # an event stream too
        assert r.status == 200 and r.headers.get("X-Frame-Options") == "DENY"
