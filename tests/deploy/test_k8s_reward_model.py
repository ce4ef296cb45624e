"""deploy/k8s/components/reward-model: included in an overlay it renders, validates strictly
(kubernetes-validate), runs `meshrl serve reward_model` with flags its argparse takes on the
port its probes, its Service and the run config's `rm` component agree on, and opens exactly
reward -> reward-model on that port (plus the reward model's own NATS access).

    .venv/bin/python -m pytest -q tests/deploy/test_k8s_reward_model.py
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.config.reward_model import reward_model_component
from tests.deploy.contract import grpc_port, serve_argv
from tests.deploy.kustomize import kustomization, render, requires_kubectl
from tests.deploy.test_k8s import K8S, allowed_flows, by_kind, env_of, probe_port, run_config, workloads

pytestmark = requires_kubectl

COMPONENT = K8S / "components" / "reward-model"


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> list[dict]:
    """The cpu-dev overlay with the component, as an overlay would include it."""
    root = tmp_path_factory.mktemp("overlay")
    return render(
        kustomization(
            root,
            namespace="meshrl-dev",
            resources=[K8S / "overlays" / "cpu-dev"],
            components=[COMPONENT],
            images=[{"name": "meshrl", "newName": "meshrl", "newTag": "cpu"}],
        )
    )


def test_validates_strictly(docs, tmp_path):
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate is missing: `bash scripts/setup.sh` installs it (test extra)"
    path = tmp_path / "reward-model.yaml"
    path.write_text(yaml.safe_dump_all(d for d in docs if d["apiVersion"] != "keda.sh/v1alpha1"))
    done = subprocess.run([tool, "--strict", "--quiet", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_args_probes_service_and_config_agree(docs):
    cfg = run_config(docs)
    w = workloads(docs)["reward-model"]
    (c,) = w["spec"]["template"]["spec"]["containers"]
    service, flags = serve_argv(c["args"])
    assert service == "reward_model" and c["image"] == "meshrl:cpu"
    port = grpc_port(service, flags, cfg, "reward-model-5f7b9c6d4-x2k94")
    assert port == cfg.reward_model.grpc_port
    assert env_of(c, "reward-model-0")["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}"
    assert {probe_port(c[p]) for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {port}
    svc = by_kind(docs, "Service")["reward-model"]
    assert svc["spec"]["clusterIP"] == "None" and {p["port"] for p in svc["spec"]["ports"]} >= {port}
    assert reward_model_component(cfg).address == f"reward-model:{port}"
    assert by_kind(docs, "PodDisruptionBudget")["reward-model"]["metadata"]["namespace"] == "meshrl-dev"


def test_network_policies_add_exactly_reward_to_reward_model(docs):
    overlay = render(K8S / "overlays" / "cpu-dev")
    port = run_config(docs).reward_model.grpc_port
    assert allowed_flows(docs) - allowed_flows(overlay) == {
        ("reward", "reward-model", port),
        ("reward-model", "nats", 4222),
    }
