"""Kubernetes' NATS requires the users deploy/k8s/make_nats_secrets.py makes (the compose
generator's, as Secrets): the Secrets validate strictly; in every overlay (and with
components/reward-model) each meshrl container reads its own kind's user from
MESHRL_NATS_CREDENTIALS_FILE, a key of its meshrl-nats-<kind> Secret mounted there, and
NATS's config includes nats-auth.conf projected beside it. Then a REAL nats-server with the rendered cpu-dev config (cluster routes cut, one
node) and the made Secrets refuses an anonymous client and the rollout user's publish to the
ready stream, while the learner and rollout users do their jobs.

    .venv/bin/python -m pytest -q tests/deploy/test_k8s_nats_auth.py
"""

import asyncio
import base64
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.transport.bus.credentials import ENV_VAR, read_credentials
from tests.deploy.kustomize import kustomization, render, requires_kubectl
from tests.deploy.test_compose_nats_auth import exercise
from tests.deploy.test_k8s import K8S, OVERLAYS, by_kind, meshrl_containers
from tests.fixtures.nats import nats_on_own_ports

sys.path.insert(0, str(K8S))
import make_nats_secrets  # noqa: E402 - deploy/k8s/make_nats_secrets.py

pytestmark = [pytest.mark.timeout(180), requires_kubectl]
MADE = {s["metadata"]["name"]: s for s in make_nats_secrets.make_secrets("meshrl")}


def secret_bytes(name: str, key: str) -> bytes:
    return base64.b64decode(MADE[name]["data"][key])


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def docs(request):
    return render(K8S / "overlays" / request.param)


def test_made_secrets_validate_strictly(tmp_path):
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate is missing: `bash scripts/setup.sh` installs it (test extra)"
    for name in MADE:  # DNS-1123 (the schema does not check it; the API server does)
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
    (tmp_path / "secrets.yaml").write_text(yaml.safe_dump_all(list(MADE.values())))
    done = subprocess.run(
        [tool, "--strict", "--quiet", str(tmp_path / "secrets.yaml")], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr


def with_reward_model(tmp_path: Path) -> list[dict]:
    """cpu-dev plus components/reward-model (whose pods are NATS clients too)."""
    return render(
        kustomization(
            tmp_path, resources=[K8S / "overlays" / "cpu-dev"], components=[K8S / "components" / "reward-model"]
        )
    )


def test_every_service_reads_its_own_user_from_its_secret(docs):
    check_own_users(docs)


def test_the_reward_model_component_reads_its_own_user(tmp_path):
    docs = with_reward_model(tmp_path)
    assert "reward-model" in {name for name, _, _ in meshrl_containers(docs)}
    check_own_users(docs)


def check_own_users(docs):
    for name, workload, c in meshrl_containers(docs):
        path = Path({e["name"]: e.get("value") for e in c["env"]}[ENV_VAR])
        volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"]["volumes"]}
        (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == str(path.parent)]
        secret = volumes[mount["name"]]["secret"]["secretName"]
        assert secret == make_nats_secrets.user_secret_name(name) and mount["readOnly"], name
        user = json.loads(secret_bytes(secret, path.name))["user"]
        assert user.replace("_", "-") == name, f"{name} would log in as {user}"


def test_nats_config_includes_the_users_projected_beside_it(docs):
    conf = by_kind(docs, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    (included,) = re.findall(r'^include "([^"]+)"', conf, re.M)
    nats = by_kind(docs, "StatefulSet")["nats"]["spec"]["template"]["spec"]
    (config,) = [v for v in nats["volumes"] if v["name"] == "config"]
    sources = config["projected"]["sources"]
    assert {"configMap": {"name": "nats-config"}} in sources and {"secret": {"name": "nats-auth"}} in sources
    assert included in MADE["nats-auth"]["data"] and "/" not in included  # same folder as nats.conf


def single_node_conf(docs, folder: Path) -> Path:
    """cpu-dev's nats.conf without its cluster block, its store in `folder`, and nats-auth.conf
    beside it."""
    conf = by_kind(docs, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    conf = re.sub(r"cluster \{.*?\n\}\n", "", conf, flags=re.S)
    conf = conf.replace("store_dir: /data/jetstream", f"store_dir: {folder / 'store'}")
    (folder / "nats.conf").write_text(conf)
    (folder / "nats-auth.conf").write_bytes(secret_bytes("nats-auth", "nats-auth.conf"))
    for user in ("learner", "rollout"):
        (folder / f"nats-{user}.json").write_bytes(secret_bytes(f"meshrl-nats-{user}", "credentials.json"))
    return folder / "nats.conf"


def test_made_users_work_on_a_real_nats_server_with_the_rendered_config(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    conf = single_node_conf(render(K8S / "overlays" / "cpu-dev"), tmp_path)
    assert "cluster" not in conf.read_text() and "include" in conf.read_text()
    with nats_on_own_ports(["-c", str(conf)], tmp_path / "nats-run", env={"POD_NAME": "nats-0"}) as port:
        asyncio.run(exercise(f"nats://127.0.0.1:{port}", tmp_path))
    assert read_credentials(tmp_path / "nats-rollout.json").user == "rollout"
