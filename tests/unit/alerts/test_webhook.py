"""WebhookSink against a real HTTP receiver on 127.0.0.1: delivery, auth, retries, timeouts."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from meshrl.alerts.sinks.webhook import WebhookSink
from meshrl.alerts.types import Alert
from meshrl.config.alerts import WebhookConfig


class Receiver:
    """An HTTP server that records POSTs; `plan` gives (status, delay_s) per request."""

    def __init__(self, plan=()):
        self.plan, self.requests = list(plan), []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), json.loads(body)))
                status, delay = receiver.plan.pop(0) if receiver.plan else (200, 0.0)
                time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver_factory():
    made = []

    def make(plan=()):
        made.append(Receiver(plan))
        return made[-1]

    yield make
    for r in made:
        r.close()


def alert(severity="critical", key="nonfinite:loss") -> Alert:
    return Alert(
        "nonfinite", key, severity, "pause", "loss is nan (not finite) at step 3", 3, 1234.5, "run-w", {"loss": None}
    )


def config(url, **kw) -> WebhookConfig:
    return WebhookConfig(url=url, **{"timeout_s": 0.5, "retries": 2, "backoff_s": 0.01, **kw})


def test_delivers_json_with_bearer_token_from_the_named_env_var(receiver_factory):
    rx = receiver_factory()
    sink = WebhookSink(config(rx.url, token_env="HOOK_TOKEN"), env={"HOOK_TOKEN": "s3cret"})
    sink(alert())
    sink(alert(severity="info"))  # below min_severity "warning": not sent
    assert sink.flush(10)
    sink.close()
    [(headers, body)] = rx.requests
    assert headers["Authorization"] == "Bearer s3cret"
    assert headers["Content-Type"] == "application/json"
    assert body == alert().to_dict()


def test_retries_5xx_then_succeeds(receiver_factory):
    rx = receiver_factory(plan=[(503, 0.0), (500, 0.0), (200, 0.0)])
    sink = WebhookSink(config(rx.url))
    assert sink.post(alert().to_dict()) is True
    assert len(rx.requests) == 3
    sink.close()


def test_client_error_is_not_retried(receiver_factory, caplog):
    rx = receiver_factory(plan=[(401, 0.0)])
    sink = WebhookSink(config(rx.url))
    assert sink.post(alert().to_dict()) is False
    assert len(rx.requests) == 1
    assert "gave up on nonfinite:loss after 1 attempt(s): HTTP 401" in caplog.text
    sink.close()


def test_receiver_that_times_out_is_retried_then_given_up(receiver_factory, caplog):
    rx = receiver_factory(plan=[(200, 2.0)] * 3)  # answers after 2 s; timeout is 0.5 s
    sink = WebhookSink(config(rx.url, retries=2))
    started = time.monotonic()
    assert sink.post(alert().to_dict()) is False
    elapsed = time.monotonic() - started
    assert len(rx.requests) == 3  # first attempt + 2 retries
    # 3 timeouts of 0.5 s + backoff 0.01 + 0.02; well under the receiver's 3 × 2 s
    assert 1.5 <= elapsed < 4.0
    assert "gave up on nonfinite:loss after 3 attempt(s)" in caplog.text
    assert "timed out" in caplog.text
    sink.close()


def test_a_slow_receiver_does_not_block_the_caller(receiver_factory):
    rx = receiver_factory(plan=[(200, 1.0)])
    sink = WebhookSink(config(rx.url, timeout_s=5.0))
    started = time.monotonic()
    sink(alert())
    assert time.monotonic() - started < 0.2  # queued; the sender thread posts
    assert sink.flush(10)
    assert len(rx.requests) == 1
    sink.close()


def test_unreachable_receiver_is_retried_and_logged(caplog):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sink = WebhookSink(config(f"http://127.0.0.1:{port}/hook", retries=1))
    assert sink.post(alert().to_dict()) is False
    assert "after 2 attempt(s): URLError" in caplog.text
    sink.close()


class Redirector:
    """An HTTP server that answers every POST/GET with a redirect to `location`."""

    def __init__(self, location, code=302):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.send_response(code)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.mark.parametrize("code", [301, 302, 307])
def test_a_redirect_is_not_followed_so_the_token_never_reaches_another_host(receiver_factory, code, caplog):
    elsewhere = receiver_factory()
    redirector = Redirector(elsewhere.url.replace("127.0.0.1", "localhost"), code)
    sink = WebhookSink(config(redirector.url, token_env="HOOK_TOKEN"), env={"HOOK_TOKEN": "s3cret"})
    assert sink.post(alert().to_dict()) is False
    sink.close()
    redirector.server.shutdown()
    assert elsewhere.requests == []
    assert f"HTTP {code} redirected to http://localhost:" in caplog.text and "s3cret" not in caplog.text
    assert "after 1 attempt(s)" in caplog.text  # a redirect will not fix itself: no retries


def test_token_from_a_file(receiver_factory, tmp_path):
    rx = receiver_factory()
    (tmp_path / "token").write_text("from-file\n")
    sink = WebhookSink(config(rx.url, token_file=str(tmp_path / "token")), env={})
    assert sink.post(alert().to_dict()) is True
    sink.close()
    assert rx.requests[0][0]["Authorization"] == "Bearer from-file"


def test_token_file_missing_or_doubled_is_a_config_error(tmp_path):
    from meshrl.errors import ConfigError

    with pytest.raises(ConfigError, match="token_file .*/absent: cannot read it"):
        WebhookSink(config("http://127.0.0.1:9/hook", token_file=str(tmp_path / "absent")), env={})
    with pytest.raises(ValueError, match="set token_env or token_file, not both"):
        config("http://127.0.0.1:9/hook", token_env="A", token_file="/x")
