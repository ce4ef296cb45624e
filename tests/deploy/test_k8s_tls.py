"""deploy/k8s/components/tls (in overlays/gpu) agrees with the code and its certificates work:
every meshrl container gets exactly the MESHRL_NATS_TLS_* and MESHRL_GRPC_TLS_* variables the
code reads, each file variable naming a key of the Secret mounted there (as make_secrets.py
makes it); no native gRPC probe is left (the kubelet's has no TLS); NATS's `tls {}` block reads
the nats-tls Secret's files and verifies clients. Rendered with the environment and reward-model
components too, every service kind of meshrl/topology.py mounts its own certificate. Then the made Secrets on real servers: a
nats-server with that block takes a service's certificate and refuses a client without one,
and a gRPC server with the rollout's files answers the learner's (by the mesh name) and
refuses plaintext.

    .venv/bin/python -m pytest -q tests/deploy/test_k8s_tls.py
"""

import asyncio
import base64
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from meshrl import topology
from meshrl.transport.bus import tls as nats_tls
from meshrl.transport.rpc import mesh_tls
from tests.deploy.kustomize import kustomization, render, requires_kubectl
from tests.deploy.test_k8s import K8S, by_kind, make_secrets, meshrl_containers

pytestmark = requires_kubectl

FILE_ENVS = {nats_tls.CA_ENV, nats_tls.CERT_ENV, nats_tls.KEY_ENV, mesh_tls.CA_ENV, mesh_tls.CERT_ENV, mesh_tls.KEY_ENV}
CODE_ENVS = FILE_ENVS | {mesh_tls.CLIENT_AUTH_ENV, mesh_tls.SERVER_NAME_ENV}
MADE = {s["metadata"]["name"]: s for s in make_secrets("meshrl")}


@pytest.fixture(scope="module")
def gpu():
    return render(K8S / "overlays" / "gpu")


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    """cpu-dev with the environment, reward-model and TLS components (TLS last, as documented)."""
    components = [K8S / "components" / name for name in ("environment", "reward-model", "tls")]
    root = tmp_path_factory.mktemp("overlay")
    return render(kustomization(root, resources=[K8S / "overlays" / "cpu-dev"], components=components))


def secret_volumes(workload) -> dict[str, str]:
    """{mount path: Secret name} of the pod's Secret volumes."""
    volumes = {
        v["name"]: v["secret"]["secretName"] for v in workload["spec"]["template"]["spec"]["volumes"] if "secret" in v
    }
    containers = workload["spec"]["template"]["spec"]["containers"]
    return {m["mountPath"]: volumes[m["name"]] for c in containers for m in c["volumeMounts"] if m["name"] in volumes}


@pytest.mark.parametrize("docs", ["gpu", "every_kind"])
def test_every_service_gets_the_tls_env_the_code_reads_pointing_at_mounted_secret_keys(docs, request):
    docs = request.getfixturevalue(docs)
    for name, workload, c in meshrl_containers(docs):
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert {k for k in env if k.startswith(("MESHRL_NATS_TLS_", "MESHRL_GRPC_TLS_"))} == CODE_ENVS, name
        mounts = secret_volumes(workload)
        for var in FILE_ENVS:
            path = Path(env[var])
            secret = mounts.get(str(path.parent))
            assert secret == f"meshrl-tls-{name}", f"{name}: {var}={path} is not in its TLS Secret's mount"
            assert path.name in MADE[secret]["data"], f"{name}: {secret} has no key {path.name}"
        assert env[mesh_tls.CLIENT_AUTH_ENV] == "1"
        assert env[mesh_tls.SERVER_NAME_ENV] == "meshrl-mesh"
        probes = [c[p] for p in ("startupProbe", "readinessProbe", "livenessProbe") if p in c]
        assert probes and all("grpc" not in p and p["exec"]["command"][:2] == ["meshrl", "health"] for p in probes)


def test_with_every_component_it_validates_strictly(every_kind, tmp_path):
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate is missing: `bash scripts/setup.sh` installs it (test extra)"
    path = tmp_path / "every-kind.yaml"
    path.write_text(yaml.safe_dump_all(d for d in every_kind if d["apiVersion"] != "keda.sh/v1alpha1"))
    done = subprocess.run([tool, "--strict", "--quiet", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_with_the_environment_and_reward_model_every_kind_mounts_its_own_certificate(every_kind):
    mounted = {name: set(secret_volumes(w).values()) for name, w, _ in meshrl_containers(every_kind)}
    assert set(mounted) == {k.dns_name for k in topology.KIND_TABLE}
    for name, secrets in mounted.items():
        assert f"meshrl-tls-{name}" in secrets and f"meshrl-tls-{name}" in MADE, name
        assert not {s for s in secrets if s.startswith("meshrl-tls-")} - {f"meshrl-tls-{name}"}, name


def nats_tls_block(docs) -> str:
    conf = by_kind(docs, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    (block,) = re.findall(r"tls \{[^}]*\}", conf)
    return block


def test_nats_serves_tls_from_its_secret_and_verifies_clients(gpu):
    block = nats_tls_block(gpu)
    files = dict(re.findall(r'(\w+_file): "([^"]+)"', block))
    mounts = secret_volumes(by_kind(gpu, "StatefulSet")["nats"])
    for path in map(Path, files.values()):
        assert mounts.get(str(path.parent)) == "nats-tls" and path.name in MADE["nats-tls"]["data"], path
    assert re.search(r"verify: true", block)


def write_secret(secret: dict, directory: Path) -> Path:
    directory.mkdir()
    for key, value in secret["data"].items():
        (directory / key).write_bytes(base64.b64decode(value))
    return directory


def test_made_secrets_work_on_a_real_nats_server(gpu, tmp_path):
    from meshrl.transport.bus import Bus, BusUnavailable, EmbeddedNats
    from meshrl.transport.bus.tls import TlsFiles

    server_dir = write_secret(MADE["nats-tls"], tmp_path / "nats-tls")
    client = write_secret(MADE["meshrl-tls-rollout"], tmp_path / "rollout")
    block = nats_tls_block(gpu).replace("/etc/nats-tls", str(server_dir))
    server = EmbeddedNats(tmp_path / "nats", tls=block)
    try:

        async def connect(files):
            try:
                async with await Bus.connect(server.url, "r", name="t", timeout=3, tls=files):
                    return "connected"
            except BusUnavailable:
                return "refused"

        mutual = TlsFiles(str(client / "ca.crt"), str(client / "tls.crt"), str(client / "tls.key"))
        assert asyncio.run(connect(mutual)) == "connected"
        assert asyncio.run(connect(TlsFiles(str(client / "ca.crt")))) == "refused"
    finally:
        server.close()


def test_made_secrets_work_for_mesh_grpc(tmp_path, monkeypatch):
    from meshrl.transport.rpc.channel import is_serving
    from meshrl.transport.rpc.server import start_server

    def use(secret: str) -> None:
        d = write_secret(MADE[secret], tmp_path / secret)
        for var, key in ((mesh_tls.CA_ENV, "ca.crt"), (mesh_tls.CERT_ENV, "tls.crt"), (mesh_tls.KEY_ENV, "tls.key")):
            monkeypatch.setenv(var, str(d / key))

    async def check() -> tuple[bool, bool]:
        use("meshrl-tls-rollout")
        monkeypatch.setenv(mesh_tls.CLIENT_AUTH_ENV, "1")
        server, port = await start_server([], host="127.0.0.2")  # an address no certificate names
        use("meshrl-tls-learner")
        monkeypatch.setenv(mesh_tls.SERVER_NAME_ENV, "meshrl-mesh")
        try:
            tls = await is_serving(f"127.0.0.2:{port}", timeout=3)  # checked against the mesh name
            for var in (mesh_tls.CA_ENV, mesh_tls.CERT_ENV, mesh_tls.KEY_ENV):
                monkeypatch.delenv(var)
            return tls, await is_serving(f"127.0.0.2:{port}", timeout=3)
        finally:
            await server.stop(None)

    assert asyncio.run(check()) == (True, False)
