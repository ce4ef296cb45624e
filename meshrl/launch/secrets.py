"""A run's secrets, the issuing side: what the local launcher makes at start into
RUN_DIR/secrets (keys 0600, the folder 0700; removed when the run stops) and the env that
points each child at its kind's files. The joining side, which names and reads these files,
is meshrl.run.secrets; the NATS users themselves are meshrl.transport.bus.run_auth.

NATS (`nats.url: embedded`): each service kind gets its user's credential file
(`service_credentials_env`: MESHRL_NATS_CREDENTIALS_FILE, set over any inherited value, so a
service never runs with the launcher's admin user). With `nats.tls: on | mutual` a run CA,
the server's certificate and a client certificate per NATS user (`create_run_tls`):

    run_tls = create_run_tls(secrets_dir, ["admin", "rollout", ...], mutual=True)
    EmbeddedNats(run_dir / "nats", tls=run_tls.server_block)
    env = run_tls.files["rollout"].env()      # MESHRL_NATS_TLS_CA_FILE (+ CERT/KEY when mutual)

gRPC (`launch.grpc_tls: on | mutual`): a run CA and one certificate per service kind, and
the MESHRL_GRPC_TLS_* env that points each child at its kind's files:

    with run_grpc_tls(cfg, run_dir):                   # grpc-ca.pem, grpc-<kind>-tls.pem/.key
        env = grpc_tls_env(cfg, run_dir, "rollout")    # CA, CERT, KEY, CLIENT_AUTH (1 = mutual)

Every mesh hop goes through meshrl.transport.rpc (start_server / open_channel), which reads
that env (mesh_tls.py): servers serve TLS only, clients trust only the run CA and present
their certificate (required with `mutual`). Each certificate serves and calls (both key
usages) and names 127.0.0.1, localhost and this host's advertised address
(MESHRL_ADVERTISE_HOST), the addresses the run KV and config announce. `off` (default):
nothing made, an inherited MESHRL_GRPC_TLS_* passes through (a cluster's own files).
Simplification: a new CA per launcher start, so a resumed run's services get new files from
the launcher that restarts them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from meshrl import topology
from meshrl.addresses import AddressError, advertise_host
from meshrl.config.schema import RunConfig
from meshrl.private_files import make_private_dir
from meshrl.run.secrets import GRPC_CA_FILE, NATS_CA_FILE, grpc_stem, nats_stem, secrets_dir
from meshrl.transport.bus.credentials import ENV_VAR, credentials_path
from meshrl.transport.bus.subjects import ADMIN
from meshrl.transport.bus.tls import TlsFiles, server_block
from meshrl.transport.certs import new_ca
from meshrl.transport.rpc.mesh_tls import CA_ENV, CERT_ENV, CLIENT_AUTH_ENV, KEY_ENV


def service_credentials_env(cfg: RunConfig, run_dir: Path, kind: str) -> dict[str, str]:
    """The env var pointing a `kind` service at its credential file (embedded NATS only);
    set over any inherited value, so a service never runs with the launcher's admin user."""
    if cfg.nats.url != "embedded":
        return {}
    return {ENV_VAR: str(credentials_path(secrets_dir(run_dir), kind)), **_service_tls_env(cfg, run_dir, kind)}


def _service_tls_env(cfg: RunConfig, run_dir: Path, kind: str) -> dict[str, str]:
    """The MESHRL_NATS_TLS_* files create_run_tls wrote for `kind` (nothing when tls is off)."""
    if cfg.nats.tls == "off":
        return {}
    d = secrets_dir(run_dir)
    if cfg.nats.tls == "mutual":
        return TlsFiles(
            str(d / NATS_CA_FILE), str(d / f"{nats_stem(kind)}.pem"), str(d / f"{nats_stem(kind)}.key")
        ).env()
    return TlsFiles(str(d / NATS_CA_FILE)).env()


def run_tls(cfg: RunConfig, run_dir: Path, users) -> tuple[str, dict[str, str]]:
    """(the server's tls {} block, the admin's MESHRL_NATS_TLS_* env); empty when tls is off."""
    if cfg.nats.tls == "off":
        return "", {}

    made = create_run_tls(secrets_dir(run_dir), list(users), mutual=cfg.nats.tls == "mutual")
    return made.server_block, made.files[ADMIN].env()


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
    ca_file = ca.write(secrets_dir / NATS_CA_FILE)
    cert, key = ca.issue("nats-server", hosts=server_hosts()).write(secrets_dir / nats_stem("server"))
    files = {}
    for user in users:
        if mutual:
            c, k = ca.issue(f"nats-{user}", server=False, client=True).write(secrets_dir / nats_stem(user))
            files[user] = TlsFiles(str(ca_file), str(c), str(k))
        else:
            files[user] = TlsFiles(str(ca_file))
    return RunTls(server_block(cert, key, ca_file, verify=mutual), files)


# Every kind issued a certificate, and admin: this host's operator tools (`meshrl status`, the
# gateway) calling the learner and rollouts.
KINDS = topology.holders(topology.TLS)


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
    files = {
        CA_ENV: str(secrets_dir(run_dir) / GRPC_CA_FILE),
        CERT_ENV: str(secrets_dir(run_dir) / f"{grpc_stem(kind)}.pem"),
        KEY_ENV: str(secrets_dir(run_dir) / f"{grpc_stem(kind)}.key"),
    }
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
