"""Make the Secrets components/tls mounts: a CA, NATS's server certificate (`nats-tls`) and one
certificate per service kind of meshrl/topology.py (`meshrl-tls-<kind>`, `_` as `-`:
meshrl-tls-reward-model; also `-admin` for an operator's `meshrl status` / `meshrl health`), each a `kubernetes.io/tls` Secret with ca.crt, tls.crt,
tls.key; printed as YAML for kubectl (it holds private keys: pipe it, never save it in git),
or with --files DIR as DIR/<secret>/<key> files (folders 0700) for deploy/compose/tls.yaml.

    python deploy/k8s/components/tls/make_secrets.py --namespace meshrl | kubectl apply -f -
    python deploy/k8s/components/tls/make_secrets.py --namespace meshrl-dev --days 90 | kubectl apply -f -
    python deploy/k8s/components/tls/make_secrets.py --namespace compose --files deploy/compose/tls

NATS's certificate names the client Service `nats` (short, namespaced and FQDN names) and
every pod behind `nats-headless`; a service's certificate serves and calls (both key usages)
under the one name meshrl-mesh that every client checks (MESHRL_GRPC_TLS_SERVER_NAME), since
pods are dialled by IP. Simplification: the CA's key is not kept (rotation = run this again
and restart the pods); with cert-manager, issue the same Secrets from a CA Issuer instead.
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path

import yaml

from meshrl import topology
from meshrl.transport.certs import new_ca

SERVICES = topology.holders(topology.TLS)
MESH_NAME = "meshrl-mesh"  # = MESHRL_GRPC_TLS_SERVER_NAME in components/tls/*.yaml


def nats_hosts(namespace: str) -> list[str]:
    names = ["nats", f"nats.{namespace}", f"nats.{namespace}.svc", f"nats.{namespace}.svc.cluster.local"]
    return [*names, "*.nats-headless", f"*.nats-headless.{namespace}.svc.cluster.local", "localhost", "127.0.0.1"]


def pem_files(issued, ca) -> dict[str, bytes]:
    from cryptography.hazmat.primitives import serialization

    key = issued.key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return {
        "ca.crt": ca.cert.public_bytes(serialization.Encoding.PEM),
        "tls.crt": issued.cert.public_bytes(serialization.Encoding.PEM),
        "tls.key": key,
    }


def tls_secret_name(service: str) -> str:
    """meshrl-tls-<service>, '_' as '-' (a Secret's name is a DNS name)."""
    return f"meshrl-tls-{service.replace('_', '-')}"


def secret(name: str, namespace: str, files: dict[str, bytes]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "meshrl"}},
        "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
    }


def make_secrets(namespace: str, days: int = 30) -> list[dict]:
    """The Secrets as dicts: nats-tls first, then meshrl-tls-<service> for each of SERVICES."""
    ca = new_ca(f"meshrl {namespace} CA", days=days)
    out = [secret("nats-tls", namespace, pem_files(ca.issue("nats", hosts=nats_hosts(namespace)), ca))]
    for service in SERVICES:
        issued = ca.issue(f"meshrl-{service}", hosts=[MESH_NAME, "localhost", "127.0.0.1"], server=True, client=True)
        out.append(secret(tls_secret_name(service), namespace, pem_files(issued, ca)))
    return out


def write_files(secrets: list[dict], directory: Path) -> None:
    """DIR/<secret name>/<key>, each folder readable by its owner only (it holds a key)."""
    from meshrl.private_files import make_private_dir

    for s in secrets:
        folder = directory / s["metadata"]["name"]
        make_private_dir(folder)
        for key, value in s["data"].items():
            (folder / key).write_bytes(base64.b64decode(value))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--namespace", required=True, help="the overlay's namespace (meshrl for overlays/gpu)")
    p.add_argument("--days", type=int, default=30, help="validity of the CA and certificates (default 30)")
    p.add_argument("--files", type=Path, metavar="DIR", help="write the files under DIR instead of printing Secrets")
    args = p.parse_args(argv)
    secrets = make_secrets(args.namespace, args.days)
    if args.files is not None:
        write_files(secrets, args.files)
    else:
        yaml.safe_dump_all(secrets, sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
