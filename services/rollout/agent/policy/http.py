"""The policy endpoint's HTTP server: OpenAI-compatible routes on the rollout's event loop.

    POST /v1/chat/completions   Authorization: Bearer <episode key>   (tools included)
    GET  /v1/models             any live episode key: [{"id": <model>}]

Bound by the mesh's address rules: MESHRL_BIND_HOST (default 127.0.0.1, loopback only) and
the base URL handed to environments names MESHRL_ADVERTISE_HOST (meshrl.addresses).
HTTPS when the run's gRPC certificate is set (MESHRL_GRPC_TLS_CERT_FILE / _KEY_FILE): the
same certificate the replica's gRPC server presents. A key is an episode's (sessions.py):
no key, a wrong one or one of an ended episode is 401 before the body is read; bodies over
8 MiB are 413. Errors have OpenAI's shape {"error": {"message", "type", "code"}}.

    server = await start_policy_server(endpoint, port=0)   # endpoint.base_url is set
    await server.cleanup()
"""

from __future__ import annotations

import json
import os
import ssl

from aiohttp import web

from meshrl.addresses import advertise_host, bind_host, host_port
from meshrl.services.rollout.agent.policy.endpoint import CallRefused, PolicyEndpoint
from meshrl.transport.rpc.mesh_tls import CERT_ENV, KEY_ENV

MAX_BODY = 8 << 20


def error(status: int, code: str, message: str) -> web.Response:
    kind = "invalid_request_error" if status == 400 else "authentication_error" if status == 401 else "api_error"
    return web.json_response({"error": {"message": message, "type": kind, "code": code}}, status=status)


def bearer(request: web.Request) -> str:
    scheme, _, key = request.headers.get("Authorization", "").partition(" ")
    return key.strip() if scheme.lower() == "bearer" else ""


def app_for(endpoint: PolicyEndpoint) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        key = bearer(request)
        if endpoint.sessions.get(key) is None:
            return error(401, "invalid_api_key", "missing, unknown or expired episode key (Authorization: Bearer KEY)")
        try:
            body = json.loads(await request.read())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return error(400, "invalid_request_error", "the body is not JSON")
        try:
            return web.json_response(await endpoint.complete(key, body))
        except CallRefused as err:
            return error(err.status, err.code, str(err))

    async def models(request: web.Request) -> web.Response:
        if endpoint.sessions.get(bearer(request)) is None:
            return error(401, "invalid_api_key", "missing, unknown or expired episode key")
        return web.json_response({"object": "list", "data": [{"id": endpoint.model, "object": "model"}]})

    app = web.Application(client_max_size=MAX_BODY)
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/v1/models", models)])
    return app


def tls_context() -> ssl.SSLContext | None:
    cert, key = os.environ.get(CERT_ENV), os.environ.get(KEY_ENV)
    if not (cert and key):
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def start_policy_server(endpoint: PolicyEndpoint, port: int = 0) -> web.AppRunner:
    """Serve `endpoint` on BIND_HOST:port (0 = a free port) and set its base_url."""
    runner = web.AppRunner(app_for(endpoint), access_log=None)
    await runner.setup()
    context = tls_context()
    site = web.TCPSite(runner, bind_host(), port, ssl_context=context)
    try:
        await site.start()
    except OSError as err:
        await runner.cleanup()
        raise OSError(
            f"policy endpoint cannot listen on {host_port(bind_host(), port)}: {err.strerror or err}; "
            f"pick a free rollout.agent.policy_endpoint.port or 0"
        ) from err
    bound = runner.addresses[0][1]
    endpoint.base_url = f"{'https' if context else 'http'}://{host_port(advertise_host(), bound)}/v1"
    return runner
