"""A run's secrets, the joining side: where RUN_DIR/secrets keeps each NATS user's credential
and TLS files and each kind's gRPC certificate, and what a process on this host needs to join
a running run with them (`meshrl status`, the CLI's control verbs, the gateway, the audit).

    args = admin_connect_args(run_dir)              # Bus.connect(credentials=..., tls=...) as admin
    env = grpc_user_env(secrets_dir(run_dir), "admin")   # MESHRL_GRPC_TLS_* the admin presents
    env = user_tls_env(secrets_dir(run_dir), "admin")    # MESHRL_NATS_TLS_* for a NATS user

The launcher makes these files at start and removes them when the run stops
(meshrl.launch.nats, nats_tls, grpc_tls); this module only names and reads them, so a process
that joins a run imports no launcher code. Every function returns {} when the run made none.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

from meshrl.config.external_calls import MESH_TLS_CA_ENV, MESH_TLS_CERT_ENV, MESH_TLS_KEY_ENV
from meshrl.run_layout import RunDir
from meshrl.transport.bus.credentials import ENV_VAR, credentials_path, read_credentials
from meshrl.transport.bus.subjects import ADMIN
from meshrl.transport.bus.tls import TlsFiles, tls_from_env

GRPC_CA_FILE = "grpc-ca.pem"
NATS_CA_FILE = "nats-ca.pem"


def secrets_dir(run_dir: Path) -> Path:
    return RunDir(run_dir).secrets


def grpc_stem(kind: str) -> str:
    """grpc-<kind>-tls: the .pem / .key pair of a kind's gRPC certificate."""
    return f"grpc-{kind}-tls"


def nats_stem(user: str) -> str:
    """nats-<user>-tls: the .pem / .key pair of a NATS user's client certificate (nats-server: the server's)."""
    return f"nats-{user}-tls"


def grpc_user_env(directory: Path, kind: str) -> dict[str, str]:
    """MESHRL_GRPC_TLS_CA/CERT/KEY_FILE for `kind` from `directory`; {} when the run made none."""
    directory = Path(directory)
    if not (directory / GRPC_CA_FILE).is_file():
        return {}
    return {
        MESH_TLS_CA_ENV: str(directory / GRPC_CA_FILE),
        MESH_TLS_CERT_ENV: str(directory / f"{grpc_stem(kind)}.pem"),
        MESH_TLS_KEY_ENV: str(directory / f"{grpc_stem(kind)}.key"),
    }


def user_tls_env(secrets_dir: Path, user: str) -> dict[str, str]:
    """MESHRL_NATS_TLS_* for `user` from the files create_run_tls left in `secrets_dir`
    ({} when the run has no NATS TLS); e.g. `meshrl status` joining a running run as admin."""
    secrets_dir = Path(secrets_dir)
    ca = secrets_dir / NATS_CA_FILE
    if not ca.is_file():
        return {}
    cert, key = secrets_dir / f"{nats_stem(user)}.pem", secrets_dir / f"{nats_stem(user)}.key"
    if cert.is_file() and key.is_file():
        return TlsFiles(str(ca), str(cert), str(key)).env()
    return TlsFiles(str(ca)).env()


def admin_connect_args(run_dir: Path) -> dict:
    """Bus.connect's `credentials` and `tls` for the run's admin user; {} when the run made
    none (an external NATS: the environment's, as for any client)."""
    admin = credentials_path(secrets_dir(run_dir), ADMIN)
    if not admin.is_file():
        return {}
    return {"credentials": read_credentials(admin), "tls": tls_from_env(user_tls_env(secrets_dir(run_dir), ADMIN))}


@contextlib.contextmanager
def admin_credentials(path: Path, extra: dict[str, str] | None = None) -> Iterator[None]:
    """MESHRL_NATS_CREDENTIALS_FILE = `path` (and `extra`, e.g. the admin's TLS files) in this
    process for the block, then as before."""
    values = {ENV_VAR: str(path), **(extra or {})}
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
