"""GatewayService over HTTP/JSON (aiohttp), from the same handlers as gRPC, plus the dashboard.

    GET  /api/runs                                   ListRuns
    GET  /api/runs/{run}/status                      GetRunStatus
    GET  /api/runs/{run}/checkpoints                 ListCheckpoints
    GET  /api/runs/{run}/samples?page_size=&page_token=&split=   ListSamples
    GET  /api/runs/{run}/groups/{group_id}/trace     GetGroupTrace
    GET  /api/runs/{run}/metrics|alerts|events       Stream*: {"records": [...]} so far;
         ...?follow=1                                as server-sent events (id = row index)
    POST /api/runs/{run}/pause|resume|checkpoint|stop    {"reason": ...}
    POST /api/runs/{run}/scale                       {"service": "rollout", "replicas": 2}
    POST /api/runs/{run}/export                      {"step": 10} (default: the newest good checkpoint)
    POST /api/runs                                   SubmitRun {"name", "config_yaml", "overrides"}
    POST /api/runs/{run}/rollback                    {"to_step": 10}
    POST /api/session {"token": ...} / GET / DELETE  the dashboard's login (an HttpOnly cookie)

JSON bodies and answers are the proto messages through protobuf's json_format, with the
proto field names. The token comes as `Authorization: Bearer TOKEN`, or a browser's session
cookie names it (a browser's EventSource cannot send a header): the cookie holds a random
session id, never the token (auth/sessions.py), and is SameSite=Strict, so another site cannot
make a browser use it.

The application (`make_app`) serves these routes, the login's and the dashboard's static
files (static/: plain HTML, JS and CSS, no build step). Requests are at most
limits.MAX_REQUEST_BYTES; a cookie-authorised change must come from the gateway's own pages
and every answer carries the browser's security headers (auth/browser.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from aiohttp import web
from google.protobuf import json_format

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.gateway.api.dispatch import ROLE, SERVICE, STREAMS, Dispatcher
from meshrl.gateway.auth.browser import add_security_headers, refuse_cross_origin
from meshrl.gateway.auth.sessions import SESSIONS, Login, Sessions, token_of
from meshrl.gateway.errors import GatewayError, error_response, invalid
from meshrl.gateway.limits import MAX_REQUEST_BYTES

STATIC = Path(__file__).parents[1] / "static"
ROUTES = [
    ("GET", "/api/runs", "ListRuns"),
    ("GET", "/api/runs/{run}/status", "GetRunStatus"),
    ("GET", "/api/runs/{run}/checkpoints", "ListCheckpoints"),
    ("GET", "/api/runs/{run}/samples", "ListSamples"),
    ("GET", "/api/runs/{run}/groups/{group_id}/trace", "GetGroupTrace"),
    ("GET", "/api/runs/{run}/metrics", "StreamMetrics"),
    ("GET", "/api/runs/{run}/alerts", "StreamAlerts"),
    ("GET", "/api/runs/{run}/events", "StreamEvents"),
    ("POST", "/api/runs/{run}/pause", "PauseRun"),
    ("POST", "/api/runs/{run}/resume", "ResumeRun"),
    ("POST", "/api/runs/{run}/checkpoint", "CheckpointRun"),
    ("POST", "/api/runs/{run}/stop", "StopRun"),
    ("POST", "/api/runs/{run}/scale", "ScaleService"),
    ("POST", "/api/runs/{run}/export", "ExportRun"),
    ("POST", "/api/runs", "SubmitRun"),
    ("POST", "/api/runs/{run}/rollback", "RollbackRun"),
]


def to_json(message) -> dict:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


async def request_message(request: web.Request, rpc: str):
    """The RPC's request message from the path, the query (GET) or the JSON body (POST)."""
    fields = {k: v for k, v in request.query.items() if k != "follow"}
    if request.method == "POST" and request.can_read_body:
        try:  # JSON is UTF-8 (RFC 8259) whatever charset the Content-Type names
            body = json.loads(await request.read())
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            raise invalid("the body is not JSON; send a JSON object with the request's fields") from None
        if not isinstance(body, dict):
            raise invalid("the body must be a JSON object")
        fields |= body
    fields |= dict(request.match_info)
    message = getattr(pb, SERVICE.methods_by_name[rpc].input_type.name)()
    try:
        return json_format.ParseDict(fields, message)
    except json_format.ParseError as err:
        raise invalid(f"bad request for {rpc}: {err}") from None


async def sse(request: web.Request, dispatcher: Dispatcher, rpc: str, message) -> web.StreamResponse:
    """Server-sent events: one `data:` per row, `id:` its index (EventSource resends it as
    Last-Event-ID when it reconnects), `event: end` when the run ended and all is sent."""
    last = request.headers.get("Last-Event-ID", "")
    if last.isdigit():
        message.from_index = int(last) + 1
    message.follow = True
    who = dispatcher.auth.authorize(token_of(request), ROLE[rpc], rpc)
    with dispatcher.follows.taken(who.name):  # refused (429) before the stream's headers go out
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        try:
            async for record in dispatcher.stream(rpc, message, token_of(request), slot_held=True):
                row = json.dumps({"index": record.index, "row": json_format.MessageToDict(record.row)})
                await response.write(f"id: {record.index}\ndata: {row}\n\n".encode())
            await response.write(b"event: end\ndata: {}\n\n")
        except ConnectionResetError:
            pass  # the browser left the page: nothing to send it
    return response


def endpoint(dispatcher: Dispatcher, rpc: str):
    async def handle(request: web.Request) -> web.StreamResponse:
        try:
            message = await request_message(request, rpc)
            if rpc in STREAMS and request.query.get("follow") in ("1", "true"):
                return await sse(request, dispatcher, rpc, message)
            if rpc in STREAMS:
                records = [to_json(r) async for r in dispatcher.stream(rpc, message, token_of(request))]
                return web.json_response({"records": records})
            return web.json_response(to_json(await dispatcher.call(rpc, message, token_of(request))))
        except GatewayError as err:
            return error_response(err)

    return handle


def page(name: str):
    async def handle(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})

    return handle


def make_app(dispatcher: Dispatcher) -> web.Application:
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[refuse_cross_origin])
    app[SESSIONS] = Sessions()
    app.on_response_prepare.append(add_security_headers)
    app.add_routes([web.route(method, path, endpoint(dispatcher, rpc)) for method, path, rpc in ROUTES])
    app.add_routes(Login(dispatcher.auth).routes())
    app.add_routes(
        [web.get("/", page("index.html")), web.get("/runs/{run}", page("run.html")), web.static("/static", STATIC)]
    )
    return app
