"""The dashboard's login: POST /api/session {"token"} checks the token and sets it as an
HttpOnly, SameSite=Strict cookie (scripts on the page never see it; EventSource sends it);
GET /api/session says who is logged in (name, role); DELETE /api/session logs out."""

from __future__ import annotations

from aiohttp import web

from meshrl.gateway.auth import TokenAuth
from meshrl.gateway.errors import GatewayError
from meshrl.gateway.http_app import COOKIE, error_response, token_of

MAX_AGE_S = 12 * 3600


def session_routes(auth: TokenAuth) -> list[web.RouteDef]:
    async def login(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            who = auth.authenticate(str(body.get("token", "")) if isinstance(body, dict) else None)
        except GatewayError as err:
            return error_response(err)
        except ValueError:
            return web.json_response({"error": 'send {"token": "..."}'}, status=400)
        response = web.json_response({"name": who.name, "role": who.role})
        response.set_cookie(COOKIE, who.token, httponly=True, samesite="Strict", max_age=MAX_AGE_S, path="/")
        return response

    async def whoami(request: web.Request) -> web.Response:
        try:
            who = auth.authenticate(token_of(request))
        except GatewayError as err:
            return error_response(err)
        return web.json_response({"name": who.name, "role": who.role})

    async def logout(request: web.Request) -> web.Response:
        response = web.json_response({})
        response.del_cookie(COOKIE, path="/")
        return response

    return [web.post("/api/session", login), web.get("/api/session", whoami), web.delete("/api/session", logout)]
