"""Make the Secrets that give Kubernetes' NATS its users: `nats-auth` (key nats-auth.conf, the
accounts and users with the passwords, which base/nats.yaml's config includes) and one
`meshrl-nats-<user>` per service kind plus `admin` (key credentials.json, mounted in that
kind's pods and read through MESHRL_NATS_CREDENTIALS_FILE). The same generator as compose's
(meshrl.transport.bus.auth_files): each user allowed exactly its run's subjects, random
passwords. Printed as YAML for kubectl: it holds the passwords, pipe it, never save it in git.

    python deploy/k8s/make_nats_secrets.py --namespace meshrl | kubectl apply -f -
    python deploy/k8s/make_nats_secrets.py --namespace meshrl-dev | kubectl apply -f -

The run id must be the pods' MESHRL_RUN_ID (default: the run config's run.name, as in base/).
New passwords: run it again, then restart NATS and every meshrl pod (`kubectl rollout restart`).
"""

from __future__ import annotations

import argparse
import base64
import sys
import tempfile
from pathlib import Path

import yaml

BASE_RUN_CONFIG = Path(__file__).resolve().parent / "base" / "run-config.yaml"
CREDENTIALS_KEY = "credentials.json"


def secret(name: str, namespace: str, files: dict[str, bytes]) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "meshrl"}},
        "data": {k: base64.b64encode(v).decode() for k, v in files.items()},
    }


def run_config(path: Path):
    """A meshrl run config file, or the ConfigMap holding one (base/run-config.yaml)."""
    from meshrl.config import load_config

    doc = yaml.safe_load(path.read_text())
    if isinstance(doc, dict) and doc.get("kind") == "ConfigMap":
        return load_config(base=yaml.safe_load(doc["data"]["config.yaml"]))
    return load_config(path)


def user_secret_name(user: str) -> str:
    """meshrl-nats-<user>, '_' as '-' (a Secret's name is a DNS name: meshrl-nats-reward-model)."""
    return f"meshrl-nats-{user.replace('_', '-')}"


def make_secrets(namespace: str, run_id: str | None = None, config: Path = BASE_RUN_CONFIG) -> list[dict]:
    """nats-auth first, then meshrl-nats-<user> for each user."""
    from meshrl.transport.bus.auth_files import write_auth_files

    cfg = run_config(config)
    with tempfile.TemporaryDirectory() as tmp:
        files = write_auth_files(
            Path(tmp) / "nats-auth", run_id or cfg.run.name, reference_enabled=cfg.reference_enabled
        )
        out = [secret("nats-auth", namespace, {files.server.name: files.server.read_bytes()})]
        out += [
            secret(user_secret_name(user), namespace, {CREDENTIALS_KEY: path.read_bytes()})
            for user, path in files.users.items()
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--namespace", required=True, help="the overlay's namespace (meshrl for overlays/gpu)")
    p.add_argument("--run-id", help="the pods' MESHRL_RUN_ID (default: the run config's run.name)")
    p.add_argument(
        "--config",
        type=Path,
        default=BASE_RUN_CONFIG,
        help="the run config, or the ConfigMap holding it (default: base/run-config.yaml)",
    )
    args = p.parse_args(argv)
    yaml.safe_dump_all(make_secrets(args.namespace, args.run_id, args.config), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
