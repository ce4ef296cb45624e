"""The dashboard's sessions: a random id in the cookie, who logged in kept in this gateway's memory.

The cookie never carries the token, so a cookie that leaks (a proxy log, a shared browser
profile) is worth one session of one gateway, not the token: logging out deletes the entry
and the old cookie is refused from then on; a restarted gateway or another instance knows
none of the ids. The table keys are SHA-256 digests of the ids (a lookup compares digests,
and the table itself holds no usable cookie). An entry lasts MAX_AGE_S; one name holds at
most MAX_PER_NAME sessions (the oldest goes), so logging in in a loop cannot grow the table.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from dataclasses import dataclass

from aiohttp import web

from meshrl.gateway.auth import Principal

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


SESSIONS = web.AppKey("sessions", Sessions)  # the app's table (app.py), read by http_app.token_of
