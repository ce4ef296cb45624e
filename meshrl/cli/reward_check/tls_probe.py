"""Why a kit could not reach a service, when gRPC only says UNAVAILABLE: a TLS handshake made
by hand (Python's `ssl`, with the kit's own flags) names the failure and its fix.

gRPC reports a plaintext call to a TLS server, and a TLS server refusing a client that has no
(or the wrong) certificate, all as "UNAVAILABLE: Socket closed"; the kits used to answer that
with "serve grpc.health.v1.Health". The probe tells them apart:

  no --tls-* flag, the server completes a TLS handshake      the server speaks TLS
  the server's certificate fails verification                certificate refused (or not for this name)
  the server answers a ClientHello with plaintext            the server speaks plaintext
  handshake done, then the server closes before any frame    it wants a client certificate / refused ours
  nothing listens                                            connection refused

    found = await TlsProbe(address, ca, cert, key, server_name).diagnose(timeout_s=5)
    if found: what, fix = found
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from dataclasses import dataclass

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS
FLAGS = {"ca": "--tls-ca", "cert": "--tls-cert", "key": "--tls-key", "server_name": "--server-name"}


def split_address(address: str) -> tuple[str, int]:
    host, _, port = address.removeprefix("dns:///").rpartition(":")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class TlsProbe:
    address: str
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None
    labels: tuple[tuple[str, str], ...] = tuple(FLAGS.items())  # how the fixes name the settings

    def label(self, name: str) -> str:
        return dict(self.labels)[name]

    @property
    def tls(self) -> bool:
        return any(v is not None for v in (self.ca, self.cert, self.key))

    async def diagnose(self, timeout_s: float = 5.0) -> tuple[str, str] | None:
        """(what failed, how to fix it), or None when the connection is not what fails."""
        try:
            return await asyncio.to_thread(self._diagnose, timeout_s)
        except (ValueError, OSError):  # an address the probe cannot parse, a file it cannot read
            return None

    def _diagnose(self, timeout_s: float) -> tuple[str, str] | None:
        host, port = split_address(self.address)
        try:
            sock = socket.create_connection((host, port), timeout=timeout_s)
        except ConnectionRefusedError:
            return (
                f"nothing listens at {self.address} (connection refused)",
                "start the service, or check ADDRESS (host:port)",
            )
        with sock:
            return self._handshake(sock, host) if self.tls else self._plaintext(sock, host)

    def _plaintext(self, sock: socket.socket, host: str) -> tuple[str, str] | None:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
        try:
            context.wrap_socket(sock, server_hostname=self.server_name or host).close()
        except (ssl.SSLError, OSError):
            return None  # no TLS there: a plaintext server, so something else fails
        return (
            "the server speaks TLS and the kit connected in plaintext",
            f"pass {self.trust()}; add {self.label('cert')} and {self.label('key')} if it asks for a client "
            "certificate",
        )

    def _handshake(self, sock: socket.socket, host: str) -> tuple[str, str] | None:
        context = ssl.create_default_context(cafile=self.ca)
        if self.cert is not None and self.key is not None:
            context.load_cert_chain(self.cert, self.key)
        context.set_alpn_protocols(["h2"])
        name = self.server_name or host
        try:
            with context.wrap_socket(sock, server_hostname=name) as tls:
                tls.sendall(H2_PREFACE)
                answered = tls.recv(64)
        except TimeoutError:
            return None  # a slow server, not a refusal
        except ssl.SSLCertVerificationError as err:
            return self._refused_server(err, name)
        except ssl.SSLError as err:
            if err.reason in ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST", "PACKET_LENGTH_TOO_LONG"):
                return (
                    "the server speaks plaintext and the kit connected with TLS",
                    f"drop {self.label('ca')}/{self.label('cert')}/{self.label('key')}, or give the server a "
                    "certificate (MESHRL_GRPC_TLS_CERT_FILE and MESHRL_GRPC_TLS_KEY_FILE)",
                )
            return self._refused_client(err.reason or str(err))
        except OSError as err:
            return self._refused_client(err.strerror or type(err).__name__)
        return None if answered else self._refused_client("closed right after the handshake")

    def _refused_server(self, err: ssl.SSLCertVerificationError, name: str) -> tuple[str, str]:
        if "mismatch" in (err.verify_message or ""):
            return (
                f"the server's certificate was refused: it is not issued for {name!r} ({err.verify_message})",
                f"connect by a name the certificate holds, or pass {self.label('server_name')} with one",
            )
        return (
            f"the server's certificate was refused ({err.verify_message})",
            f"pass {self.trust()}" if self.ca else f"the system CAs do not trust it: pass {self.trust()}",
        )

    def trust(self) -> str:
        return f"{self.label('ca')} CA_FILE (the CA that signed the server's certificate)"

    def _refused_client(self, why: str) -> tuple[str, str]:
        if self.cert is None:
            return (
                f"no client certificate: the server requires one (mutual TLS) and refused the connection ({why})",
                f"pass {self.label('cert')} and {self.label('key')}: a client certificate signed by a CA the "
                "server trusts",
            )
        return (
            f"the server refused the client certificate {self.label('cert')} ({why})",
            "use a client certificate signed by the CA the server trusts (its MESHRL_GRPC_TLS_CA_FILE)",
        )
