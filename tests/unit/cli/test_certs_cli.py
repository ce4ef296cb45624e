"""`meshrl certs issue` from an operator's CA: what it issues chains to that CA (whose subject
names more than a CN) with the right key usages and SANs; bad CA files are one line, exit 2."""

import datetime as dt

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from meshrl.cli.main import main
from meshrl.transport.certs import new_ca


def operator_ca(tmp_path):
    """A CA as an operator's PKI makes one: organisation and common name, its own key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Ops"), x509.NameAttribute(NameOID.COMMON_NAME, "Ops CA")]
    )
    now = dt.datetime.now(dt.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + dt.timedelta(days=10))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "ops.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    (tmp_path / "ops.key").write_bytes(pem)
    return cert


def load(path):
    return x509.load_pem_x509_certificate(path.read_bytes())


def usages(cert):
    return list(cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value)


def test_certificates_from_an_operators_ca_chain_to_it(tmp_path):
    ca = operator_ca(tmp_path)
    args = ["certs", "issue", "--kind", "reward", "--name", "judge", "--host", "judge.svc", "--host", "10.0.0.7"]
    assert (
        main(
            [
                *args,
                "--ca-cert",
                str(tmp_path / "ops.pem"),
                "--ca-key",
                str(tmp_path / "ops.key"),
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    server, client = load(tmp_path / "o" / "judge-server.pem"), load(tmp_path / "o" / "judge-client.pem")
    for cert in (server, client):
        cert.verify_directly_issued_by(ca)
        assert cert.not_valid_after_utc <= ca.not_valid_after_utc  # --days 90 capped by the CA's 10
    assert usages(server) == [ExtendedKeyUsageOID.SERVER_AUTH] and usages(client) == [ExtendedKeyUsageOID.CLIENT_AUTH]
    sans = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["judge.svc"] and [
        str(ip) for ip in sans.get_values_for_type(x509.IPAddress)
    ] == ["10.0.0.7"]
    assert not (tmp_path / "o" / "ca.key").exists()  # the operator's key stays where it is


@pytest.mark.parametrize(
    "ca_args, says",
    [
        (["--ca-cert", "ops.pem"], "--ca-cert and --ca-key go together"),
        (["--ca-cert", "leaf.pem", "--ca-key", "leaf.key"], "leaf.pem is no CA certificate"),
        (["--ca-cert", "ops.pem", "--ca-key", "leaf.key"], "leaf.key is not the key of"),
        (["--ca-cert", "missing.pem", "--ca-key", "ops.key"], "cannot read the CA certificate"),
        (["--ca-cert", "ops.key", "--ca-key", "ops.key"], "ops.key is no PEM certificate"),
    ],
)
def test_bad_ca_files_are_one_line(tmp_path, capsys, ca_args, says):
    operator_ca(tmp_path)
    new_ca("other").issue("leaf", hosts=["x"]).write(tmp_path / "leaf")
    ca_args = [a if a.startswith("--") else str(tmp_path / a) for a in ca_args]
    args = ["certs", "issue", "--kind", "environment", "--name", "e", "--host", "x", "--out", str(tmp_path / "o")]
    assert main([*args, *ca_args]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1
