"""Alerts POSTed as JSON to a webhook (Slack/PagerDuty relays, Alertmanager-style receivers).

Each POST has a timeout; timeouts, connection errors, 429 and 5xx are retried `retries`
times with doubling backoff; other 4xx are not (a wrong URL or token will not fix itself).
Posting runs on one background thread so a slow receiver never stalls training; `flush()`
waits for the queue, `close()` flushes and stops the thread. The bearer token is read from
the environment variable named by `token_env` (or the file named by `token_file`) when the
sink is built, and never logged.

Redirects are never followed: urllib turns a redirected POST into a GET and copies every
header, the token included, to whatever host `Location` names. A 3xx is reported (with its
Location, so the URL can be fixed) and not retried.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
import urllib.error
import urllib.request
from typing import Mapping

from meshrl.alerts.types import Alert, at_least
from meshrl.config.alerts import WebhookConfig
from meshrl.config.secrets import read_secret

log = logging.getLogger("meshrl.alerts")
RETRY_STATUS = {429, 500, 502, 503, 504}


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise urllib.error.HTTPError(
            req.full_url,
            code,
            f"redirected to {newurl}; redirects are not followed (set alerts.webhook.url to the final URL)",
            headers,
            fp,
        )


_OPENER = urllib.request.build_opener(_RefuseRedirects)


def _token(config: WebhookConfig, env: Mapping[str, str]) -> str | None:
    return read_secret(
        env_name=config.token_env,
        file=config.token_file,
        env=env,
        env_label="alerts.webhook.token_env",
        file_label="alerts.webhook.token_file",
    )


class WebhookSink:
    def __init__(self, config: WebhookConfig, env: Mapping[str, str] = os.environ):
        self.config = config
        self._headers = {"Content-Type": "application/json", "User-Agent": "meshrl-alerts"}
        token = _token(config, env)
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="meshrl-alert-webhook", daemon=True)
        self._thread.start()

    def __call__(self, alert: Alert) -> None:
        if at_least(alert.severity, self.config.min_severity):
            self._queue.put(alert.to_dict())

    def _attempt(self, body: bytes) -> tuple[bool, bool, str]:
        """One POST: (delivered, worth retrying, what happened)."""
        request = urllib.request.Request(self.config.url, data=body, headers=self._headers, method="POST")
        try:
            with _OPENER.open(request, timeout=self.config.timeout_s) as response:
                return True, False, f"HTTP {response.status}"
        except urllib.error.HTTPError as err:
            return False, err.code in RETRY_STATUS, f"HTTP {err.code} {err.reason}"
        except (urllib.error.URLError, TimeoutError, OSError) as err:
            return False, True, f"{type(err).__name__}: {getattr(err, 'reason', err)}"

    def post(self, payload: dict) -> bool:
        """POST one alert now, with the retries; True when the receiver accepted it (2xx)."""
        body = json.dumps(payload, default=str).encode()
        delay, attempts = self.config.backoff_s, self.config.retries + 1
        for attempt in range(1, attempts + 1):
            ok, retry, what = self._attempt(body)
            if ok:
                return True
            if not retry or attempt == attempts:
                log.error(
                    "alerts: webhook %s gave up on %s after %d attempt(s): %s",
                    self.config.url,
                    payload.get("key"),
                    attempt,
                    what,
                )
                return False
            time.sleep(delay)
            delay *= 2
        return False

    def _run(self) -> None:
        while True:
            payload = self._queue.get()
            try:
                if payload is None:
                    return
                self.post(payload)
            finally:
                self._queue.task_done()

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait until every queued alert was delivered or given up; False on timeout."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    def close(self, timeout_s: float = 30.0) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=timeout_s)
