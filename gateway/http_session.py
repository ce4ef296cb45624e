"""The dashboard's login: POST /api/session {"token"} checks the token and opens a session
(sessions.py) whose random id is the cookie: HttpOnly (scripts on the page never see it;
EventSource sends it), SameSite=Strict, and Secure when the page came over HTTPS (directly,
or through a TLS-terminating proxy that says so in X-Forwarded-Proto); GET /api/session says
who is logged in (name, role); DELETE /api/session logs out: the session is deleted, so the
old cookie is refused even if a copy of it was kept."""

from __future__ import annotations

import json

from aiohttp import web

from meshrl.gateway.auth import TokenAuth
from meshrl.gateway.errors import GatewayError
from meshrl.gateway.http_app import error_response, token_of
from meshrl.gateway.sessions import COOKIE, MAX_AGE_S, SESSIONS


def over_https(request: web.Request) -> bool:
    """A forged X-Forwarded-Proto can only add Secure (a stricter cookie), never remove it."""
    return request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"


def session_routes(auth: TokenAuth) -> list[web.RouteDef]:
    async def login(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())  # JSON is UTF-8, whatever charset the header names
            who = auth.authenticate(str(body.get("token", "")) if isinstance(body, dict) else None)
        except GatewayError as err:
            return error_response(err)
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            return web.json_response({"error": 'send {"token": "..."}'}, status=400)
        request.app[SESSIONS].close(request.cookies.get(COOKIE))  # a new login never keeps the old id
        session_id = request.app[SESSIONS].open(who)
        response = web.json_response({"name": who.name, "role": who.role})
        response.set_cookie(
            COOKIE,
            session_id,
            httponly=True,
            samesite="Strict",
            secure=over_https(request),
            max_age=MAX_AGE_S,
            path="/",
        )
        return response

    async def whoami(request: web.Request) -> web.Response:
        try:
            who = auth.authenticate(token_of(request))
        except GatewayError as err:
            return error_response(err)
        return web.json_response({"name": who.name, "role": who.role})

    async def logout(request: web.Request) -> web.Response:
        request.app[SESSIONS].close(request.cookies.get(COOKIE))
        response = web.json_response({})
        response.del_cookie(COOKIE, path="/")
        return response

    return [web.post("/api/session", login), web.get("/api/session", whoami), web.delete("/api/session", logout)]
