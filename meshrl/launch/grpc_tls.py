"""The local launcher's mesh gRPC TLS (`launch.grpc_tls: on | mutual`): a run CA and one
certificate per service kind, made at start into RUN_DIR/secrets (keys 0600; removed when
the run stops), and the MESHRL_GRPC_TLS_* env that points each child at its kind's files.

    with run_grpc_tls(cfg, run_dir):                   # grpc-ca.pem, grpc-<kind>-tls.pem/.key
        env = grpc_tls_env(cfg, run_dir, "rollout")    # CA, CERT, KEY, CLIENT_AUTH (1 = mutual)
    grpc_user_env(secrets_dir(run_dir), "admin")       # what `meshrl status` / the gateway present (meshrl.run.secrets)

Every mesh hop goes through meshrl.transport.rpc (start_server / open_channel), which reads
this env (mesh_tls.py): servers serve TLS only, clients trust only the run CA and present
their certificate (required with `mutual`). Each certificate serves and calls (both key
usages) and names 127.0.0.1, localhost and the advertised host, the addresses the run KV
and config announce. `off` (default): nothing made, an inherited MESHRL_GRPC_TLS_* passes
through (a cluster's own files). Simplification: a new CA per launcher start (as nats.tls).
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Iterator

from meshrl.config.schema import RunConfig
from meshrl.run.secrets import GRPC_CA_FILE, grpc_stem, secrets_dir
from meshrl.transport.rpc.mesh_tls import CA_ENV, CERT_ENV, CLIENT_AUTH_ENV, KEY_ENV
from meshrl.launch.nats_tls import server_hosts
from meshrl.private_files import make_private_dir
from meshrl.transport.certs import new_ca

# admin: this host's operator tools (`meshrl status`, the gateway) calling the learner and rollouts
KINDS = ("learner", "rollout", "reward", "reference", "reward_model", "environment", "admin")
def create_grpc_tls(directory: Path) -> None:
    """The CA certificate and a certificate + key per kind in `directory` (made 0700)."""
    make_private_dir(directory)
    ca = new_ca("meshrl run gRPC CA")
    ca.write(directory / GRPC_CA_FILE)
    for kind in KINDS:
        ca.issue(f"meshrl-{kind}", hosts=server_hosts(), server=True, client=True).write(directory / grpc_stem(kind))


def grpc_tls_env(cfg: RunConfig, run_dir: Path, kind: str) -> dict[str, str]:
    """A `kind` child's MESHRL_GRPC_TLS_* (set over inherited values); {} when the switch is off."""
    if cfg.launch.grpc_tls == "off":
        return {}
    files = {CA_ENV: str(secrets_dir(run_dir) / GRPC_CA_FILE),
             CERT_ENV: str(secrets_dir(run_dir) / f"{grpc_stem(kind)}.pem"),
             KEY_ENV: str(secrets_dir(run_dir) / f"{grpc_stem(kind)}.key")}
    return {**files, CLIENT_AUTH_ENV: "1" if cfg.launch.grpc_tls == "mutual" else "0"}


@contextlib.contextmanager
def run_grpc_tls(cfg: RunConfig, run_dir: Path) -> Iterator[None]:
    """Make the run's gRPC certificates for the block (nothing when the switch is off)."""
    if cfg.launch.grpc_tls == "off":
        yield
        return
    directory = secrets_dir(run_dir)
    create_grpc_tls(directory)
    try:
        yield
    finally:
        for path in directory.glob("grpc-*"):
            path.unlink(missing_ok=True)


__all__ = ["KINDS", "create_grpc_tls", "grpc_tls_env", "run_grpc_tls"]
