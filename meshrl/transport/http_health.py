"""Is an HTTP server there: GET URL/health answers 200 (OpenEnv servers serve it, as do most).

    reason = http_health("http://127.0.0.1:8000", timeout_s=2)   # "" when healthy
    wait_http_healthy("http://127.0.0.1:8000", within_s=60)     # ConnectionError naming why not

Used before a run starts (the launcher, `meshrl doctor`) and by the OpenEnv adapter at its
start, so a server that is not there is one line at start-up, not every group dropped.
Plain urllib: a probe needs no client library and no event loop.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request


def http_health(url: str, timeout_s: float) -> str:
    """ "" when GET url/health answers 200 within `timeout_s`; else what happened, in a few words."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout_s) as answer:
            return "" if answer.status == 200 else f"GET /health answered {answer.status}"
    except urllib.error.HTTPError as err:
        return f"GET /health answered {err.code}"
    except (urllib.error.URLError, OSError) as err:
        return f"GET /health failed: {getattr(err, 'reason', err)}"


def wait_http_healthy(url: str, within_s: float, poll_s: float = 0.5) -> None:
    """Return once url/health answers 200; ConnectionError with the last reason after `within_s`."""
    deadline = time.monotonic() + within_s
    while True:
        reason = http_health(url, timeout_s=min(2.0, within_s))
        if not reason:
            return
        if time.monotonic() >= deadline:
            raise ConnectionError(f"{url}: {reason} after {within_s:g} s")
        time.sleep(poll_s)
