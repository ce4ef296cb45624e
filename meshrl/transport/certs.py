"""Certificates for a run's own TLS: a CA, then server and client certificates it signs.

    ca = new_ca("meshrl run x CA")
    ca.write(secrets / "ca.pem")
    ca.issue("nats-server", hosts=["127.0.0.1", "localhost"]).write(secrets / "nats-server")
    ca.issue("rollout", client=True).write(secrets / "nats-client-rollout")   # .pem + .key

Used by the local launcher (nats.tls: on | mutual), by `meshrl certs issue` (certificates for
services meshrl does not launch, from a CA of the operator's: `load_ca`) and by the tests
(tests/fixtures/tls_certs.py).
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

    def write_key(self, path: Path) -> Path:
        """The CA's private key (0600), for a CA that issues again later (`load_ca`)."""
        key_pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        return write_private_file(Path(path), key_pem)

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
            _builder(subject, key, self.cert.subject, self.days)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        )
        sans = list(dict.fromkeys(hosts))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName([_san(h) for h in sans]), critical=False)
        return Issued(builder.sign(self.key, hashes.SHA256()), key)


def _builder(subject: str, key, issuer: x509.Name, days: int) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.timezone.utc)
    # Five minutes back: a peer whose clock is a little behind still accepts it.
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)  # the CA's whole subject: an operator's CA may name more than a CN
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
        _builder(name, key, _name(name), days)
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


class NotACa(ValueError):
    """A CA certificate or key that cannot issue: the message names the file and the fix."""


def load_ca(cert_file: Path, key_file: Path, *, days: int) -> CertificateAuthority:
    """An operator's CA from its PEM certificate and unencrypted PEM key; certificates it issues
    live `days`, never past the CA's own expiry."""
    cert = _read_pem(cert_file, "certificate", x509.load_pem_x509_certificate)
    key = _read_pem(key_file, "private key", lambda data: serialization.load_pem_private_key(data, None))
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        raise NotACa(f"{cert_file} is no CA certificate (no basicConstraints CA:TRUE): name the CA's own certificate")
    if key.public_key().public_numbers() != cert.public_key().public_numbers():
        raise NotACa(f"{key_file} is not the key of {cert_file}: name the CA certificate's own key")
    left = (cert.not_valid_after_utc - dt.datetime.now(dt.timezone.utc)).days
    if left < 1:
        raise NotACa(f"{cert_file} expires within a day ({cert.not_valid_after_utc:%Y-%m-%d}): renew the CA first")
    name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return CertificateAuthority(name[0].value if name else "CA", cert, key, min(days, left))


def _read_pem(path: Path, what: str, parse):
    try:
        return parse(Path(path).read_bytes())
    except OSError as err:
        raise NotACa(f"cannot read the CA {what} {path}: {err.strerror}") from None
    except (ValueError, TypeError) as err:
        raise NotACa(
            f"{path} is no PEM {what} meshrl can use ({str(err)[:120]}); an encrypted key: decrypt it first"
        ) from None


__all__ = ["CertificateAuthority", "Issued", "NotACa", "load_ca", "new_ca"]
