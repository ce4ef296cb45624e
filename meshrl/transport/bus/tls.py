"""NATS over TLS: which files a client uses, as an ssl.SSLContext for nats-py.

    MESHRL_NATS_TLS_CA_FILE    the CA that signed the server's certificate (TLS on when set)
    MESHRL_NATS_TLS_CERT_FILE  this client's certificate  } both, for a server that verifies
    MESHRL_NATS_TLS_KEY_FILE   this client's private key  } clients (mutual TLS)

    files = tls_from_env()                # None: plaintext, as before
    await nats.connect(url, tls=files.context())

Only paths travel (environment, config); the PEM is read when the connection is made. The
local launcher writes the files into RUN_DIR/secrets (nats.tls: on | mutual); in Kubernetes
or compose they are a Secret mounted as files. `server_block` is the nats-server `tls {}`
config for the same files.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from meshrl.transport.bus.errors import BusError

CA_ENV = "MESHRL_NATS_TLS_CA_FILE"
CERT_ENV = "MESHRL_NATS_TLS_CERT_FILE"
KEY_ENV = "MESHRL_NATS_TLS_KEY_FILE"


class TlsConfigError(BusError):
    """A TLS file is missing or unreadable, or a certificate comes without its key."""


@dataclass(frozen=True)
class TlsFiles:
    ca_file: str
    cert_file: str | None = None
    key_file: str | None = None

    def __post_init__(self):
        if (self.cert_file is None) != (self.key_file is None):
            raise TlsConfigError(
                f"NATS mutual TLS needs both {CERT_ENV} and {KEY_ENV} (the client "
                f"certificate and its key); set both, or neither for plain TLS"
            )

    def env(self) -> dict[str, str]:
        """The environment that makes a service's Bus.connect use these files."""
        env = {CA_ENV: self.ca_file}
        if self.cert_file:
            env |= {CERT_ENV: self.cert_file, KEY_ENV: self.key_file}
        return env

    def context(self) -> ssl.SSLContext:
        """A client context trusting only `ca_file`, presenting the client certificate if any."""
        for what, path in (("CA", self.ca_file), ("certificate", self.cert_file), ("key", self.key_file)):
            if path is not None and not os.access(path, os.R_OK):
                raise TlsConfigError(
                    f"cannot read the NATS TLS {what} file {path!r}: fix the path in "
                    f"{CA_ENV}/{CERT_ENV}/{KEY_ENV}, or mount the file there"
                )
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.ca_file)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.cert_file:
            ctx.load_cert_chain(self.cert_file, self.key_file)
        return ctx


def tls_from_env(environ=None) -> TlsFiles | None:
    """The files the MESHRL_NATS_TLS_* variables name; None when no CA is set (plaintext)."""
    env = os.environ if environ is None else environ
    ca, cert, key = (env.get(name, "").strip() or None for name in (CA_ENV, CERT_ENV, KEY_ENV))
    if ca is None:
        if cert or key:
            raise TlsConfigError(
                f"{CERT_ENV}/{KEY_ENV} are set but {CA_ENV} is not: set it to the CA "
                "that signed the NATS server's certificate"
            )
        return None
    return TlsFiles(ca, cert, key)


def server_block(cert_file: Path, key_file: Path, ca_file: Path, *, verify: bool) -> str:
    """nats-server's `tls {}` block; `verify`: every client must present a certificate the CA signed."""
    return (
        f'tls {{\n  cert_file: "{cert_file}"\n  key_file: "{key_file}"\n  ca_file: "{ca_file}"\n'
        f"  verify: {'true' if verify else 'false'}\n  timeout: 2\n}}\n"
    )
