"""TLS for the mesh's own gRPC hops (learner→reference, eval→rollout, status→learner/rollout),
set through the environment so every service and client of a deployment agrees:

    MESHRL_GRPC_TLS_CERT_FILE    this process's certificate } a server serves TLS with them; a
    MESHRL_GRPC_TLS_KEY_FILE     and its private key        } client presents them (mutual TLS)
    MESHRL_GRPC_TLS_CA_FILE      the CA that signs the mesh's certificates: clients use TLS
                                 and trust only it
    MESHRL_GRPC_TLS_CLIENT_AUTH  "1": servers require a client certificate the CA signed
    MESHRL_GRPC_TLS_SERVER_NAME  the name clients check in the server's certificate, when
                                 the address dialled is not in it (optional)

One certificate per service serves and calls (both extended key usages; see
meshrl.transport.certs). Only paths travel; in Kubernetes or compose a Secret mounted as
files. Nothing set: plaintext, as before (one host, loopback only).

Every TLS file of a gRPC hop is read here, the mesh's and the external services' alike:
`channel_credentials(ca_file, cert_file, key_file)` is TLS trusting `ca_file` (None = the
system roots), mutual with a client certificate and key; a missing or unreadable file is a
ConfigError naming it (external channels: tls.py).

A process that calls several runs, each with its own CA (the gateway; `launch.grpc_tls`),
wraps each run's calls in `with caller_env(run_env):`: clients in that block (and tasks it
starts) read `run_env` instead of os.environ; an empty one falls back to os.environ.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from pathlib import Path
from typing import Iterator, Mapping

import grpc
from cryptography import x509

from meshrl.config.external_calls import (
    MESH_TLS_CA_ENV as CA_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_CERT_ENV as CERT_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_CLIENT_AUTH_ENV as CLIENT_AUTH_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_KEY_ENV as KEY_ENV,
)
from meshrl.config.external_calls import (
    MESH_TLS_SERVER_NAME_ENV as SERVER_NAME_ENV,
)
from meshrl.errors import ConfigError

WHO = "mesh gRPC TLS (MESHRL_GRPC_TLS_*)"


CONFIG_LABELS = {"ca_file": "tls.ca_file", "cert_file": "tls.cert_file", "key_file": "tls.key_file"}


def _read(path: str | None, label: str, who: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as err:
        raise ConfigError(
            f"{who}: cannot read {label} {path!r} ({err.strerror}): fix the path, or mount the file there"
        ) from None


def channel_credentials(
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    *,
    who: str = "external service",
    labels: dict[str, str] = CONFIG_LABELS,
) -> grpc.ChannelCredentials:
    """TLS credentials (mutual TLS when cert_file and key_file are given). `labels` name the
    three settings in errors: config keys by default, a CLI passes its flags."""
    if (cert_file is None) != (key_file is None):
        raise ConfigError(f"{who}: mutual TLS needs both {labels['cert_file']} and {labels['key_file']}")
    return grpc.ssl_channel_credentials(
        root_certificates=_read(ca_file, labels["ca_file"], who),
        private_key=_read(key_file, labels["key_file"], who),
        certificate_chain=_read(cert_file, labels["cert_file"], who),
    )


_CALLER_ENV: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("meshrl_grpc_tls", default=None)


@contextlib.contextmanager
def caller_env(env: Mapping[str, str] | None) -> Iterator[None]:
    """Clients in the block (this task, and tasks started in it) use `env`'s MESHRL_GRPC_TLS_*."""
    token = _CALLER_ENV.set(env)
    try:
        yield
    finally:
        _CALLER_ENV.reset(token)


def _client_env(environ):
    return environ if environ is not None else (_CALLER_ENV.get() or os.environ)


def _get(env, name: str) -> str | None:
    return env.get(name, "").strip() or None


def _client_auth(env) -> bool:
    value = (_get(env, CLIENT_AUTH_ENV) or "0").lower()
    if value not in {"0", "1", "true", "false"}:
        raise ConfigError(f"{CLIENT_AUTH_ENV}={value!r}: use 1 (require client certificates) or 0")
    return value in {"1", "true"}


def server_credentials(environ=None) -> grpc.ServerCredentials | None:
    """TLS (mutual with CLIENT_AUTH=1) for a server, or None: no certificate set."""
    env = os.environ if environ is None else environ
    cert, key, ca = _get(env, CERT_ENV), _get(env, KEY_ENV), _get(env, CA_ENV)
    if cert is None and key is None:
        if _client_auth(env):
            raise ConfigError(f"{CLIENT_AUTH_ENV}=1 needs TLS: set {CERT_ENV} and {KEY_ENV} (and {CA_ENV})")
        return None
    if cert is None or key is None:
        raise ConfigError(f"{WHO}: a server needs both {CERT_ENV} and {KEY_ENV}; set both, or neither")
    require = _client_auth(env)
    if require and ca is None:
        raise ConfigError(f"{CLIENT_AUTH_ENV}=1 needs {CA_ENV}, the CA that signs the clients' certificates")
    pair = (_read(key, "key_file", WHO), _read(cert, "cert_file", WHO))
    roots = _read(ca, "ca_file", WHO) if require else None
    return grpc.ssl_server_credentials([pair], root_certificates=roots, require_client_auth=require)


def authorised_kind(environ=None) -> str | None:
    """This server's own kind (its certificate's name, meshrl-<kind>) when it requires client
    certificates: its methods are then authorised by the caller's kind (authz.py); else None."""
    env = os.environ if environ is None else environ
    cert = _get(env, CERT_ENV)
    if cert is None or not _client_auth(env):
        return None
    names = x509.load_pem_x509_certificate(_read(cert, "cert_file", WHO)).subject.get_attributes_for_oid(
        x509.NameOID.COMMON_NAME
    )
    name = str(names[0].value) if names else ""
    return name.removeprefix("meshrl-") if name.startswith("meshrl-") else None


def client_credentials(environ=None) -> grpc.ChannelCredentials | None:
    """TLS trusting the mesh CA, presenting this process's certificate if it has one; None
    (plaintext) when no CA is set."""
    env = _client_env(environ)
    ca = _get(env, CA_ENV)
    if ca is None:
        return None
    cert, key = _get(env, CERT_ENV), _get(env, KEY_ENV)
    return channel_credentials(ca, cert, key, who=WHO)


def client_options(environ=None) -> list[tuple[str, str]]:
    name = _get(_client_env(environ), SERVER_NAME_ENV)
    return [("grpc.ssl_target_name_override", name)] if name else []


__all__ = [
    "CA_ENV",
    "CERT_ENV",
    "CLIENT_AUTH_ENV",
    "KEY_ENV",
    "SERVER_NAME_ENV",
    "authorised_kind",
    "caller_env",
    "channel_credentials",
    "client_credentials",
    "client_options",
    "server_credentials",
]
