"""Refuse a state-changing HTTP request that a browser sent from another origin with the
gateway's cookie.

The dashboard's login is a cookie (http_session.py), and a browser attaches it to every
request to the gateway, whichever page makes it. SameSite=Strict stops other *sites*, but
every port of 127.0.0.1 (any local web app, a notebook) is the same site. So a request that
changes something (any method but GET/HEAD/OPTIONS) and carries no `Authorization` header
(the cookie is its only credential) must come from the gateway's own pages: its `Origin`
(or, without one, its `Referer`) must name this host. Clients with a bearer header (CLI,
scripts) send no ambient credential and are not affected.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from meshrl.gateway.auth import bearer

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def same_origin(request: web.Request) -> bool:
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    return bool(source) and source != "null" and urlsplit(source).netloc == request.host


@web.middleware
async def refuse_cross_origin(request: web.Request, handler):
    # only a well-formed bearer token skips the check: it is then the request's only credential
    # (http_app.token_of never falls back to the cookie when an Authorization header is there)
    if request.method in SAFE_METHODS or bearer(request.headers.get("Authorization")) or same_origin(request):
        return await handler(request)
    return web.json_response(
        {
            "error": f"refused a {request.method} from origin "
            f"{request.headers.get('Origin') or 'unknown'}: the gateway's cookie "
            "acts only for its own pages; send 'Authorization: Bearer TOKEN' from "
            "other clients",
            "code": "PERMISSION_DENIED",
        },
        status=403,
    )
