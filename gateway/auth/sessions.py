"""The dashboard's login: a session whose random id is the cookie, who logged in kept in this
gateway's memory, and the routes that open, show and close one.

    POST /api/session {"token": ...}   checks the token, opens a session, sets the cookie
    GET /api/session                   who is logged in (name, role)
    DELETE /api/session                logs out: the session is deleted, so the old cookie is
                                       refused even if a copy of it was kept

The cookie never carries the token, so a cookie that leaks (a proxy log, a shared browser
profile) is worth one session of one gateway, not the token: logging out deletes the entry
and the old cookie is refused from then on; a restarted gateway or another instance knows
none of the ids. The table keys are SHA-256 digests of the ids (a lookup compares digests,
and the table itself holds no usable cookie). An entry lasts MAX_AGE_S; one name holds at
most MAX_PER_NAME sessions (the oldest goes), so logging in in a loop cannot grow the table.
The cookie is HttpOnly (scripts on the page never see it; EventSource sends it),
SameSite=Strict, and Secure when the page came over HTTPS (directly, or through a
TLS-terminating proxy that says so in X-Forwarded-Proto).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass

from aiohttp import web

from meshrl.gateway.auth.tokens import Principal, TokenAuth, bearer
from meshrl.gateway.errors import GatewayError, error_response

MAX_AGE_S = 12 * 3600
MAX_PER_NAME = 16
COOKIE = "meshrl_gateway_session"


@dataclass(frozen=True)
class Session:
    who: Principal
    expires: float  # time.monotonic() after which it is refused


def _key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


class Sessions:
    def __init__(self, max_age_s: float = MAX_AGE_S, per_name: int = MAX_PER_NAME):
        self.max_age_s, self.per_name = max_age_s, per_name
        self.table: dict[str, Session] = {}  # insertion order: oldest first

    def open(self, who: Principal) -> str:
        """A new session for `who`; its id (the cookie's value)."""
        mine = [k for k, s in self.table.items() if s.who.name == who.name]
        for key in mine[: max(0, len(mine) - self.per_name + 1)]:
            del self.table[key]
        session_id = secrets.token_urlsafe(32)
        self.table[_key(session_id)] = Session(who, time.monotonic() + self.max_age_s)
        return session_id

    def principal(self, session_id: str | None) -> Principal | None:
        """Who holds this session, or None (unknown, logged out, expired)."""
        if not session_id:
            return None
        session = self.table.get(_key(session_id))
        if session is None or session.expires < time.monotonic():
            self.table.pop(_key(session_id), None)
            return None
        return session.who

    def close(self, session_id: str | None) -> None:
        if session_id:
            self.table.pop(_key(session_id), None)


SESSIONS = web.AppKey("sessions", Sessions)  # the app's table (api/http_app.py), read by token_of


def token_of(request: web.Request) -> str | None:
    """The bearer header's token, else the token of whoever holds the cookie's session. A request
    with an Authorization header is judged by it alone (a malformed one never falls back to the
    cookie, which a browser may attach to a request another page made)."""
    if "Authorization" in request.headers:
        return bearer(request.headers["Authorization"]) or None
    who = request.app[SESSIONS].principal(request.cookies.get(COOKIE))
    return who.token if who else None


def over_https(request: web.Request) -> bool:
    """A forged X-Forwarded-Proto can only add Secure (a stricter cookie), never remove it."""
    return request.secure or request.headers.get("X-Forwarded-Proto", "").lower() == "https"


class Login:
    """The /api/session routes, checking tokens against `auth`."""

    def __init__(self, auth: TokenAuth):
        self.auth = auth

    def routes(self) -> list[web.RouteDef]:
        return [
            web.post("/api/session", self.login),
            web.get("/api/session", self.whoami),
            web.delete("/api/session", self.logout),
        ]

    async def login(self, request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())  # JSON is UTF-8, whatever charset the header names
            who = self.auth.authenticate(str(body.get("token", "")) if isinstance(body, dict) else None)
        except GatewayError as err:
            return error_response(err)
        except (ValueError, RecursionError):  # RecursionError: arrays nested thousands deep
            return web.json_response({"error": 'send {"token": "..."}'}, status=400)
        request.app[SESSIONS].close(request.cookies.get(COOKIE))  # a new login never keeps the old id
        response = web.json_response({"name": who.name, "role": who.role})
        response.set_cookie(
            COOKIE,
            request.app[SESSIONS].open(who),
            httponly=True,
            samesite="Strict",
            secure=over_https(request),
            max_age=MAX_AGE_S,
            path="/",
        )
        return response

    async def whoami(self, request: web.Request) -> web.Response:
        try:
            who = self.auth.authenticate(token_of(request))
        except GatewayError as err:
            return error_response(err)
        return web.json_response({"name": who.name, "role": who.role})

    async def logout(self, request: web.Request) -> web.Response:
        request.app[SESSIONS].close(request.cookies.get(COOKIE))
        response = web.json_response({})
        response.del_cookie(COOKIE, path="/")
        return response
