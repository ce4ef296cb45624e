"""What keeps another web page from acting through the dashboard in a user's browser.

- Same origin: the dashboard's login is a cookie (sessions.py), and a browser attaches it to
  every request to the gateway, whichever page makes it. SameSite=Strict stops other *sites*,
  but every port of 127.0.0.1 (any local web app, a notebook) is the same site. So a request
  that changes something (any method but GET/HEAD/OPTIONS) and carries no `Authorization`
  header (the cookie is its only credential) must come from the gateway's own pages: its
  `Origin` (or, without one, its `Referer`) must name this host. Clients with a bearer header
  (CLI, scripts) send no ambient credential and are not affected.
- Headers on every answer (pages, scripts, JSON, event streams, errors): the
  Content-Security-Policy lets the dashboard load scripts, styles and data only from the
  gateway itself and run no inline script, so a value the page shows (a sample's text, a run
  name) that smuggles markup in cannot run code or send data elsewhere; frame-ancestors 'none'
  and X-Frame-Options: DENY (for browsers without CSP 3) keep another page from framing the
  dashboard to trick clicks on Pause or Stop; X-Content-Type-Options: nosniff, so a JSON
  answer is never run as a script; Referrer-Policy: same-origin, so a run's URL never leaves
  in a Referer (the same-origin check still gets the gateway's own).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from aiohttp import web

from meshrl.gateway.auth.tokens import bearer

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
CSP = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def same_origin(request: web.Request) -> bool:
    source = request.headers.get("Origin") or request.headers.get("Referer") or ""
    return bool(source) and source != "null" and urlsplit(source).netloc == request.host


@web.middleware
async def refuse_cross_origin(request: web.Request, handler):
    # only a well-formed bearer token skips the check: it is then the request's only credential
    # (sessions.token_of never falls back to the cookie when an Authorization header is there)
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


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An on_response_prepare hook: runs for every answer, static files and errors included."""
    response.headers.update(SECURITY_HEADERS)
