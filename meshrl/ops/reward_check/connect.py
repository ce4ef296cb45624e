"""The kit's channel: plaintext, TLS or mutual TLS, and a bearer token as call metadata."""
from __future__ import annotations

from pathlib import Path

import grpc
from grpc import aio

from meshrl.config import ConfigError
from meshrl.config.secrets import read_secret
from meshrl.transport.rpc.limits import message_options


def _read(path: str | None, flag: str) -> bytes | None:
    if path is None:
        return None
    try:
        return Path(path).expanduser().read_bytes()
    except OSError as err:
        raise ConfigError(f"{flag} {path!r}: cannot read it ({err.strerror}); fix the path") from None


def open_check_channel(address: str, *, tls_ca: str | None = None, tls_cert: str | None = None,
                       tls_key: str | None = None, server_name: str | None = None) -> aio.Channel:
    """TLS when any --tls-* flag is given (mutual TLS with --tls-cert and --tls-key)."""
    if (tls_cert is None) != (tls_key is None):
        raise ConfigError("mutual TLS needs both --tls-cert and --tls-key")
    options = list(message_options())
    if server_name:
        options.append(("grpc.ssl_target_name_override", server_name))
    if tls_ca is None and tls_cert is None:
        return aio.insecure_channel(address, options=options)
    creds = grpc.ssl_channel_credentials(root_certificates=_read(tls_ca, "--tls-ca"),
                                         private_key=_read(tls_key, "--tls-key"),
                                         certificate_chain=_read(tls_cert, "--tls-cert"))
    return aio.secure_channel(address, creds, options=options)


def token_metadata(token_file: str | None) -> tuple[tuple[str, str], ...]:
    """("authorization", "Bearer <token>") from the file; the token is never printed."""
    token = read_secret(env_name=None, file=token_file, file_label="--token-file")
    return () if token is None else (("authorization", f"Bearer {token}"),)
