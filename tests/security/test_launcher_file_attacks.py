"""A run that rewrites its own launcher.json cannot steer the gateway's signals or credentials.

launcher.json is in the run dir, which a submitted run's processes (the gateway's user) can
write. Against a real gateway, with a child process as the run's launcher (it holds the run's
launch lock and serves its NATS and learner ports, as `meshrl train` does):
- the file's pid is changed to another process of the user (standing for the gateway or
  another run's launcher): StopRun signals nothing and that process lives on;
- the file's nats_url is changed to a listener the attacker runs on loopback: a viewer's
  status call does not send it the run's NATS admin password.

Run: .venv/bin/python -m pytest tests/security/test_launcher_file_attacks.py -q
"""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys

import grpc
import pytest

from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.api.gateway.v1 import gateway_pb2_grpc
from meshrl.run.presence import LauncherInfo, write_presence
from meshrl.run.secrets import secrets_dir
from meshrl.transport.bus.credentials import read_credentials
from meshrl.transport.bus.run_auth import create_run_auth
from tests.fixtures.gateway import gateway_for

OPERATOR, VIEWER = "operator-token-launcher-0123", "viewer-token-launcher-01234"
pytestmark = pytest.mark.asyncio(loop_scope="session")


class FakeNats:
    """A loopback listener that speaks just enough NATS (an INFO asking for auth) to be sent a
    CONNECT, and keeps every byte it is sent."""

    def __init__(self):
        self.received, self.server = bytearray(), None

    async def start(self) -> int:
        self.server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def _client(self, reader, writer):
        writer.write(b'INFO {"server_id":"evil","version":"2.10.0","max_payload":1048576,"auth_required":true}\r\n')
        await writer.drain()
        while chunk := await reader.read(4096):
            self.received += chunk


LAUNCHER = """
import fcntl, os, socket, sys, time
lock = os.open(os.path.join(sys.argv[1], "launcher.lock"), os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)  # as meshrl.run.presence.launch_lock does for a launcher's life
ports = []
for _ in range(2):
    sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(); ports.append(sock)
print(*(s.getsockname()[1] for s in ports), flush=True)
time.sleep(300)
"""


def launched(root, name: str):
    """(run dir, its LauncherInfo, the launcher process): a run whose launcher holds the lock
    and listens on its NATS and learner ports, as `meshrl train` does."""
    run_dir = root / name
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(f"run: {{name: {name}}}\n")
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    nats_port, learner_port = proc.stdout.readline().split()
    info = LauncherInfo(proc.pid, f"{name}-1", f"nats://127.0.0.1:{nats_port}", f"127.0.0.1:{learner_port}", {})
    write_presence(run_dir, info)
    return run_dir, info, proc


async def test_a_rewritten_pid_is_not_signalled(tmp_path):
    run_dir, info, launcher = launched(tmp_path, "tenant")
    victim = subprocess.Popen(["sleep", "120"])  # another process of this user
    try:
        write_presence(run_dir, dataclasses.replace(info, pid=victim.pid))  # what the run's processes can do
        gw = await gateway_for(tmp_path, tmp_path.parent, olga=("operator", OPERATOR))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await gateway_pb2_grpc.GatewayServiceStub(channel).StopRun(
                    pb.RunActionRequest(run="tenant"), metadata=(("authorization", f"Bearer {OPERATOR}"),)
                )
        await gw.stop()
        await asyncio.sleep(0.5)
        assert victim.poll() is None, "the gateway signalled a process that is not the run's launcher"
        assert (
            refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "is not running" in refused.value.details()
        )
    finally:
        for proc in (victim, launcher):
            proc.kill()
            proc.wait()


async def test_a_rewritten_nats_url_is_not_sent_the_admin_password(tmp_path):
    run_dir, info, launcher = launched(tmp_path, "tenant")
    evil = FakeNats()  # this process: not the launcher's
    write_presence(run_dir, dataclasses.replace(info, nats_url=f"nats://127.0.0.1:{await evil.start()}"))
    auth = create_run_auth(secrets_dir(run_dir), info.run_id)  # the run's NATS users, as the launcher makes them
    password = read_credentials(auth.files["admin"]).password
    try:
        gw = await gateway_for(tmp_path, tmp_path.parent, vic=("viewer", VIEWER))
        async with grpc.aio.insecure_channel(f"127.0.0.1:{gw.grpc_port}") as channel:
            status = await gateway_pb2_grpc.GatewayServiceStub(channel).GetRunStatus(
                pb.GetRunStatusRequest(run="tenant"), metadata=(("authorization", f"Bearer {VIEWER}"),), timeout=30
            )
        await gw.stop()
    finally:
        launcher.kill()
        launcher.wait()
    await asyncio.sleep(0.5)
    assert password.encode() not in evil.received, (
        "the gateway sent the run's NATS admin password to launcher.json's URL"
    )
    assert not status.run.live and not status.replicas
