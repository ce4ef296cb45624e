"""The aiohttp application: the API routes (http_app.py), the login (http_session.py) and
the dashboard's static files (static/: plain HTML, JS and CSS, no build step)."""
from __future__ import annotations

from aiohttp import web

from meshrl.gateway.dispatch import Dispatcher
from meshrl.gateway.http_app import ROUTES, STATIC, endpoint
from meshrl.gateway.http_session import session_routes


def page(name: str):
    async def handle(request: web.Request) -> web.FileResponse:
        return web.FileResponse(STATIC / name, headers={"Cache-Control": "no-cache"})
    return handle


def make_app(dispatcher: Dispatcher) -> web.Application:
    app = web.Application()
    app.add_routes([web.route(method, path, endpoint(dispatcher, rpc)) for method, path, rpc in ROUTES])
    app.add_routes(session_routes(dispatcher.auth))
    app.add_routes([web.get("/", page("index.html")), web.get("/runs/{run}", page("run.html")),
                    web.static("/static", STATIC)])
    return app
