"""Certificates for a run's own TLS: a CA, then server and client certificates it signs.

    ca = new_ca("meshrl run x CA")
    ca.write(secrets / "ca.pem")
    ca.issue("nats-server", hosts=["127.0.0.1", "localhost"]).write(secrets / "nats-server")
    ca.issue("rollout", client=True).write(secrets / "nats-client-rollout")   # .pem + .key

Used by the local launcher (nats.tls: on | mutual) and by the tests (tests/fixtures/tls_certs.py).
EC P-256 keys (fast to make). Keys are written mode 0600 from the start, never in a log.
Simplification: no revocation, no rotation; a run's CA lives `days` (default 30) and a new
one is made at every launcher start, so a certificate never outlives its run for long.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from meshrl.private_files import write_private_file


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key; `write(stem)` makes stem.pem and stem.key."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey = field(repr=False)

    def write(self, stem: Path) -> tuple[Path, Path]:
        stem = Path(stem)
        cert_path = stem.with_name(stem.name + ".pem")
        cert_path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        key_pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return cert_path, write_private_file(stem.with_name(stem.name + ".key"), key_pem)


@dataclass(frozen=True)
class CertificateAuthority:
    name: str
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey = field(repr=False)
    days: int = 30

    def write(self, path: Path) -> Path:
        """The CA certificate only (its key stays in memory: nothing issues later)."""
        path = Path(path)
        path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        return path

    def issue(self, subject: str, *, hosts: Iterable[str] = (), server: bool = True, client: bool = False) -> Issued:
        """A certificate for `subject`; `hosts` (IPs or DNS names) go in its SAN. `server` and
        `client` pick the extended key usages (both: one identity serving and calling)."""
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + (
            [ExtendedKeyUsageOID.CLIENT_AUTH] if client else []
        )
        if not usages:
            raise ValueError(f"certificate {subject!r}: pick server=True and/or client=True")
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (
            _builder(subject, key, self.name, self.days)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        sans = list(dict.fromkeys(hosts))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in sans]), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key)


def _builder(subject: str, key, issuer: str, days: int) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.timezone.utc)
    # Five minutes back: a peer whose clock is a little behind still accepts it.
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=days))
    )


def new_ca(name: str, *, days: int = 30) -> CertificateAuthority:
    if days < 1:
        raise ValueError(f"days={days}: a CA must be valid for at least one day")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(name, key, name, days)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(name, cert, key, days)


__all__ = ["CertificateAuthority", "Issued", "new_ca"]
