"""The aiohttp application: the API routes (http_app.py), the login (http_session.py) and
the dashboard's static files (static/: plain HTML, JS and CSS, no build step). Requests are
at most limits.MAX_REQUEST_BYTES; a cookie-authorised change must come from the gateway's
own pages (same_origin.py); the login's sessions live in the app (sessions.py), and every
answer carries the headers of headers.py (CSP, no framing)."""

from __future__ import annotations

from aiohttp import web

from meshrl.gateway.dispatch import Dispatcher
from meshrl.gateway.headers import add_security_headers
from meshrl.gateway.http_app import ROUTES, STATIC, endpoint
from meshrl.gateway.http_session import session_routes
from meshrl.gateway.limits import MAX_REQUEST_BYTES
from meshrl.gateway.same_origin import refuse_cross_origin
from meshrl.gateway.sessions import SESSIONS, Sessions


def page(name: str):
    async def handle(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})

    return handle


def make_app(dispatcher: Dispatcher) -> web.Application:
    app = web.Application(client_max_size=MAX_REQUEST_BYTES, middlewares=[refuse_cross_origin])
    app[SESSIONS] = Sessions()
    app.on_response_prepare.append(add_security_headers)
    app.add_routes([web.route(method, path, endpoint(dispatcher, rpc)) for method, path, rpc in ROUTES])
    app.add_routes(session_routes(dispatcher.auth))
    app.add_routes(
        [web.get("/", page("index.html")), web.get("/runs/{run}", page("run.html")), web.static("/static", STATIC)]
    )
    return app
