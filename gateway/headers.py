"""Headers every gateway HTTP answer carries (pages, scripts, JSON, event streams, errors).

- Content-Security-Policy: the dashboard loads scripts, styles and data only from the gateway
  itself and runs no inline script, so a value the page shows (a sample's text, a run name)
  that smuggles markup in cannot run code or send data elsewhere; frame-ancestors 'none' and
  X-Frame-Options: DENY (for browsers without CSP 3) keep another page from framing the
  dashboard to trick clicks on Pause or Stop.
- X-Content-Type-Options: nosniff, so a JSON answer is never run as a script;
  Referrer-Policy: same-origin, so a run's URL never leaves in a Referer (same_origin.py
  still gets the gateway's own).
"""

from __future__ import annotations

from aiohttp import web

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


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An on_response_prepare hook: runs for every answer, static files and errors included."""
    response.headers.update(SECURITY_HEADERS)
