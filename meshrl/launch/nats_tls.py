"""TLS for the embedded NATS server: a run CA, the server's certificate, a client certificate
per NATS user, all made at run start into RUN_DIR/secrets (keys 0600; removed with the
secrets when the server stops).

    run_tls = create_run_tls(secrets_dir, ["admin", "rollout", ...], mutual=True)
    EmbeddedNats(run_dir / "nats", tls=run_tls.server_block)
    env = run_tls.files["rollout"].env()      # MESHRL_NATS_TLS_CA_FILE (+ CERT/KEY when mutual)

The server certificate names 127.0.0.1, localhost and this host's advertised address
(MESHRL_ADVERTISE_HOST), the names a client may dial. Simplification: a new CA per start,
so a resumed run's services get new files from the launcher that restarts them.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from meshrl.transport.bus.tls import TlsFiles, server_block
from meshrl.transport.certs import new_ca
from meshrl.addresses import AddressError, advertise_host


@dataclass(frozen=True)
class RunTls:
    server_block: str
    files: dict[str, TlsFiles]  # NATS user -> the files its clients use


def server_hosts() -> list[str]:
    hosts = ["127.0.0.1", "localhost"]
    try:
        hosts.append(advertise_host())
    except AddressError:
        pass  # binding every interface without an advertised host: loopback names only
    return hosts


def create_run_tls(secrets_dir: Path, users: Iterable[str], *, mutual: bool) -> RunTls:
    secrets_dir = Path(secrets_dir)
    ca = new_ca("meshrl run CA")
    ca_file = ca.write(secrets_dir / "nats-ca.pem")
    cert, key = ca.issue("nats-server", hosts=server_hosts()).write(secrets_dir / "nats-server-tls")
    files = {}
    for user in users:
        if mutual:
            c, k = ca.issue(f"nats-{user}", server=False, client=True).write(secrets_dir / f"nats-{user}-tls")
            files[user] = TlsFiles(str(ca_file), str(c), str(k))
        else:
            files[user] = TlsFiles(str(ca_file))
    return RunTls(server_block(cert, key, ca_file, verify=mutual), files)
