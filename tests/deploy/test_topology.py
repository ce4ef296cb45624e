"""Compose and Kubernetes give every service kind of meshrl/topology.py what its row promises:
a service (compose) or workload (Kubernetes) named after it running `meshrl serve <kind>`, its
gRPC port as the health address, and each secret it lists in a file its env points at: its
NATS user's credentials, its own certificate, the checkpoint key. Compose is compose.yaml
with every override merged the way Compose merges; Kubernetes the cpu-dev overlay with the
environment, reward-model and TLS components, whose NetworkPolicies open exactly each kind's
gRPC port to the kinds the table says call it. The scripts that make the Secrets issue each
one named here.

    .venv/bin/python -m pytest -q tests/deploy/test_topology.py
"""

import sys
from pathlib import Path, PurePosixPath

import pytest
import yaml

from meshrl import topology
from meshrl.inputs.checkpoint.key import KEY_ENV
from meshrl.transport.bus.auth_files import write_auth_files
from meshrl.transport.bus.credentials import ENV_VAR, credentials_path
from meshrl.transport.bus.tls import CERT_ENV as NATS_CERT_ENV
from meshrl.transport.rpc.mesh_tls import CERT_ENV as GRPC_CERT_ENV
from tests.deploy.kustomize import kustomization, render, requires_kubectl
from tests.deploy.test_compose import COMPOSE, COMPOSE_DIR, merged_service
from tests.deploy.test_k8s import K8S, allowed_flows, env_of, meshrl_containers, workloads

# isort: split
import make_secrets  # noqa: E402 - deploy/k8s/components/tls/make_secrets.py (test_k8s put it on sys.path)

sys.path.insert(0, str(K8S))
import make_nats_secrets  # noqa: E402 - deploy/k8s/make_nats_secrets.py

OVERRIDES = ("environment.yaml", "reward-model.yaml", "tls.yaml", "tls-environment.yaml", "tls-reward-model.yaml")
# secret -> the env variables naming its files
FILES_OF = {
    topology.NATS_USER: (ENV_VAR,),
    topology.TLS: (NATS_CERT_ENV, GRPC_CERT_ENV),
    topology.CHECKPOINT_KEY: (KEY_ENV,),
}


def k8s_secret_name(secret: str, kind: str) -> str:
    return {
        topology.NATS_USER: make_nats_secrets.user_secret_name(kind),
        topology.TLS: make_secrets.tls_secret_name(kind),
        topology.CHECKPOINT_KEY: "meshrl-checkpoint-key",
    }[secret]


def compose_secret_name(secret: str, kind: str) -> str:
    dns = kind.replace("_", "-")
    return {
        topology.NATS_USER: f"nats-{kind}",
        topology.TLS: f"meshrl-tls-{dns}",
        topology.CHECKPOINT_KEY: "checkpoint-key",
    }[secret]


@pytest.fixture(scope="module")
def compose() -> tuple[dict, dict]:
    """(services, secrets) of compose.yaml with every override, as Compose merges them."""
    doc = yaml.safe_load(COMPOSE.read_text())
    services, secrets = doc["services"], doc["secrets"]
    for name in OVERRIDES:
        override = yaml.safe_load((COMPOSE_DIR / name).read_text())
        services |= {n: merged_service(services.get(n, {}), s) for n, s in override["services"].items()}
        secrets |= override.get("secrets", {})
    return services, secrets


@pytest.fixture(scope="module")
def k8s_docs(tmp_path_factory) -> list[dict]:
    """The cpu-dev overlay with every optional kind and TLS."""
    components = [K8S / "components" / name for name in ("environment", "reward-model", "tls")]
    root = tmp_path_factory.mktemp("overlay")
    return render(kustomization(root, resources=[K8S / "overlays" / "cpu-dev"], components=components))


@pytest.fixture(scope="module")
def k8s(k8s_docs) -> dict:
    """{workload name: (workload, its meshrl container)}."""
    assert {n for n, _, _ in meshrl_containers(k8s_docs)} == set(workloads(k8s_docs)) - {"nats"}
    return {name: (w, c) for name, w, c in meshrl_containers(k8s_docs)}


def compose_provider(service: dict, path: str) -> str | None:
    """The compose secret (/run/secrets/NAME) or the bound host folder's name that holds `path`."""
    p = PurePosixPath(path)
    if p.parent == PurePosixPath("/run/secrets") and p.name in service.get("secrets", []):
        return p.name
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("./") and PurePosixPath(target) == p.parent:
            return PurePosixPath(source).name
    return None


def k8s_provider(workload: dict, container: dict, path: str) -> str | None:
    """The Secret mounted where `path` is."""
    secrets = {
        v["name"]: v["secret"]["secretName"] for v in workload["spec"]["template"]["spec"]["volumes"] if "secret" in v
    }
    parent = str(PurePosixPath(path).parent)
    return next((secrets.get(m["name"]) for m in container.get("volumeMounts", []) if m["mountPath"] == parent), None)


@pytest.mark.parametrize("kind", topology.KIND_TABLE, ids=lambda k: k.name)
def test_every_kind_is_a_compose_service_with_its_port_and_secrets(compose, kind):
    services, secrets = compose
    assert kind.dns_name in services, f"no compose service {kind.dns_name!r} in compose.yaml or {OVERRIDES}"
    svc = services[kind.dns_name]
    assert svc["command"][0] == kind.name, svc["command"]
    env = svc["environment"]
    assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{kind.grpc_port}", kind.name
    for secret in kind.secrets:
        for var in FILES_OF[secret]:
            assert var in env, f"compose {kind.dns_name}: {secret} promised, {var} not set"
            assert compose_provider(svc, env[var]) == compose_secret_name(secret, kind.name), f"{kind.name}: {var}"
    user = compose_secret_name(topology.NATS_USER, kind.name)
    assert secrets[user]["file"] == f"./nats-auth/{credentials_path(Path('.'), kind.name).name}"


@requires_kubectl
@pytest.mark.parametrize("kind", topology.KIND_TABLE, ids=lambda k: k.name)
def test_every_kind_is_a_k8s_workload_with_its_ports_and_secrets(k8s, kind):
    assert kind.dns_name in k8s, f"no Kubernetes workload {kind.dns_name!r} in base or components"
    workload, c = k8s[kind.dns_name]
    assert c["args"][0] == kind.name, c["args"]
    env = env_of(c, f"{kind.dns_name}-0")
    assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{kind.grpc_port}", kind.name
    assert {p["name"]: p["containerPort"] for p in c["ports"]}["metrics"] == topology.METRICS_PORT
    assert kind.scalable == (workload["kind"] == "Deployment"), kind.name
    for secret in kind.secrets:
        for var in FILES_OF[secret]:
            assert var in env, f"Kubernetes {kind.dns_name}: {secret} promised, {var} not set"
            assert k8s_provider(workload, c, env[var]) == k8s_secret_name(secret, kind.name), f"{kind.name}: {var}"


@requires_kubectl
def test_network_policies_open_exactly_each_kinds_callers_to_its_port(k8s_docs):
    between_kinds = {(a, b, port) for a, b, port in allowed_flows(k8s_docs) if b != "nats" and a != b}
    assert between_kinds == {
        (topology.KINDS[caller].dns_name, k.dns_name, k.grpc_port) for k in topology.KIND_TABLE for caller in k.callers
    }


def test_the_secret_makers_issue_every_name_the_files_mount(tmp_path):
    issued = {s["metadata"]["name"] for s in [*make_secrets.make_secrets("m"), *make_nats_secrets.make_secrets("m")]}
    for secret in (topology.TLS, topology.NATS_USER):
        assert {k8s_secret_name(secret, name) for name in topology.holders(secret)} <= issued, secret
    users = write_auth_files(tmp_path / "nats-auth", "r").users  # what compose mounts (make_nats_auth.py)
    assert set(users) == set(topology.holders(topology.NATS_USER))
    assert all(path.name == credentials_path(Path("."), name).name for name, path in users.items())
