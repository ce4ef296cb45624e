"""meshrl/run/remote.py never forwards the token across a redirect to another origin: against real
local HTTP servers, a gateway URL that redirects to another port or another host is refused
with a LaunchError naming the target, and the target sees no request at all (so no
Authorization header); a redirect on the gateway's own origin is followed with the token.

    .venv/bin/python -m pytest -q tests/unit/run/test_remote_redirects.py
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from meshrl.errors import LaunchError
from meshrl.run.remote import TOKEN_ENV, call

TOKEN = "tok-redirect-test-5f1e"


class Recorder(BaseHTTPRequestHandler):
    """Redirects paths in `server.redirects`; answers the rest with the Authorization it got."""

    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.seen.append((self.path, self.headers.get("Authorization")))
        target = self.server.redirects.get(self.path)
        if target:
            self.send_response(302)
            self.send_header("Location", target)
            self.end_headers()
            return
        body = json.dumps({"authorization": self.headers.get("Authorization")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    servers = []

    def start(host: str) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer((host, 0), Recorder)
        server.seen, server.redirects = [], {}
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def base(server) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


@pytest.mark.parametrize("other_host", ["127.0.0.1", "127.0.0.2"], ids=["another-port", "another-host"])
def test_redirect_to_another_origin_is_refused_and_the_token_never_arrives(serve, monkeypatch, other_host):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    gateway, elsewhere = serve("127.0.0.1"), serve(other_host)
    gateway.redirects["/api/runs/r1/status"] = f"{base(elsewhere)}/api/runs/r1/status"
    with pytest.raises(LaunchError, match=rf"redirected \(302\) to {base(elsewhere)}.*token is not sent"):
        call(f"{base(gateway)}/runs/r1", "GET", "status")
    assert gateway.seen == [("/api/runs/r1/status", f"Bearer {TOKEN}")]
    assert elsewhere.seen == []  # not even a request without the token


def test_redirect_on_the_same_origin_is_followed_with_the_token(serve, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    gateway = serve("127.0.0.1")
    gateway.redirects["/api/runs/r1/status"] = "/api/runs/r1/status/"
    assert call(f"{base(gateway)}/runs/r1", "GET", "status") == {"authorization": f"Bearer {TOKEN}"}
    assert [path for path, _ in gateway.seen] == ["/api/runs/r1/status", "/api/runs/r1/status/"]
