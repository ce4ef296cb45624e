"""deploy/k8s/components/environment (+ environment-hpa / environment-keda): included in an
overlay they render, validate strictly (kubernetes-validate; the ScaledObject against the
committed KEDA schema), run `meshrl serve environment` with flags its argparse takes on the port
its probes, its Service and the run config's environment.address agree on, open exactly
rollout -> environment on that port (plus the environment's own NATS access: nothing else out),
and scale the environment Deployment.

    .venv/bin/python -m pytest -q tests/deploy/test_k8s_environment.py
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.deploy.contract import grpc_port, serve_argv
from tests.deploy.kustomize import kustomization, render, requires_kubectl
from tests.deploy.test_k8s import K8S, allowed_flows, by_kind, env_of, probe_port, run_config, workloads

pytestmark = requires_kubectl

COMPONENTS = K8S / "components"


def with_components(tmp_path_factory, overlay: str, *names: str) -> list[dict]:
    root = tmp_path_factory.mktemp("overlay")
    return render(
        kustomization(
            root,
            namespace="meshrl-dev",
            resources=[K8S / "overlays" / overlay],
            components=[COMPONENTS / n for n in names],
            images=[{"name": "meshrl", "newName": "meshrl", "newTag": "cpu"}],
        )
    )


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> list[dict]:
    return with_components(tmp_path_factory, "cpu-dev", "environment", "environment-hpa")


def test_validates_strictly(docs, tmp_path):
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate is missing: `bash scripts/setup.sh` installs it (test extra)"
    path = tmp_path / "environment.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    done = subprocess.run([tool, "--strict", "--quiet", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_args_probes_service_and_config_agree(docs):
    cfg = run_config(docs)
    w = workloads(docs)["environment"]
    (c,) = w["spec"]["template"]["spec"]["containers"]
    service, flags = serve_argv(c["args"])
    assert service == "environment" and c["image"] == "meshrl:cpu"
    port = grpc_port(service, flags, cfg, "environment-5f7b9c6d4-x2k94")
    assert env_of(c, "environment-0")["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}"
    assert {probe_port(c[p]) for p in ("startupProbe", "readinessProbe", "livenessProbe")} == {port}
    svc = by_kind(docs, "Service")["environment"]
    assert svc["spec"]["clusterIP"] == "None" and {p["port"] for p in svc["spec"]["ports"]} >= {port}
    assert cfg.environment.address == f"environment:{port}" and cfg.environment.builtin == "tool_arith"
    assert not cfg.environment.launched  # served by these pods, not by `meshrl train`
    assert {v["name"] for v in w["spec"]["template"]["spec"]["volumes"]} == {"run-config", "nats-user", "runs"}
    assert by_kind(docs, "PodDisruptionBudget")["environment"]["metadata"]["namespace"] == "meshrl-dev"


def test_network_policies_add_exactly_rollout_to_environment(docs):
    overlay = render(K8S / "overlays" / "cpu-dev")
    port = int(run_config(docs).environment.address.rsplit(":", 1)[1])
    assert allowed_flows(docs) - allowed_flows(overlay) == {
        ("rollout", "environment", port),
        ("environment", "nats", 4222),
    }


def test_the_hpa_scales_the_environment(docs):
    hpa = by_kind(docs, "HorizontalPodAutoscaler")["environment"]
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "environment"}


def test_the_keda_scaledobject_validates_and_scales_the_environment(tmp_path_factory):
    docs = with_components(tmp_path_factory, "gpu", "environment", "environment-keda")
    schema = json.loads((K8S / "schemas" / "keda-scaledobject-v1alpha1.json").read_text())
    scaled = by_kind(docs, "ScaledObject")["environment"]
    jsonschema.validate(scaled, schema)
    assert scaled["spec"]["scaleTargetRef"]["name"] == "environment" and "environment" in workloads(docs)
