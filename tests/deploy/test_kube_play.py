"""The Kubernetes manifests, run by a container runtime: the cpu-dev overlay, rendered by
kustomize, played by `podman kube play` (podman 4.3, Debian's) -- NATS, learner (under
torchrun, as the StatefulSet runs it), rollout, reward and reference, each its own pod from the
built images -- trains a few steps, the ledger balanced, every service answering its health
probe's `meshrl health`.

What the test adds over the overlay, as kustomize (a test overlay in a temp dir): the images
built here (no registry: `nats` is the meshrl image, which has nats-server, so NATS runs as
its user 10001), a single NATS node (cpu-dev's three-node cluster needs three hosts' worth of
NATS), the tiny model's run config, the NATS users' Secrets (deploy/k8s/make_nats_secrets.py). What podman 4.3 does not do
of a cluster, and what is done instead, is tests/deploy/kube_play.py's docstring; the kinds it
ignores (Namespace, Service, NetworkPolicy, HorizontalPodAutoscaler, PodDisruptionBudget,
StatefulSet) are asserted here as ignored by podman itself, and stay validated by
tests/deploy/test_k8s*.py.

    MESHRL_IMAGE_TESTS=all .venv/bin/python -m pytest -q -s tests/deploy/test_kube_play.py   # root; not in CI
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from meshrl.transport.bus.credentials import ENV_VAR
from tests.chaos.ledger_proof import prove_ledger, versions_at_step
from tests.deploy.kube_play import IGNORED, KubePlay
from tests.deploy.kustomize import kustomization, render
from tests.deploy.test_image_mesh import UID, readable_copy, tiny_run
from tests.e2e.conftest import e2e_data  # noqa: F401  (a fixture)
from tests.fixtures.images import ROOT, meshrl_image, podman, require_image_tests  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
K8S = ROOT / "deploy" / "k8s"
STEPS = 4
PROMPTS = 4
RUN_ID = "grpo-smollm2"  # the manifests' MESHRL_RUN_ID
NAMESPACE = "meshrl-dev"
ONE_NODE_NATS = """port: 4222
http_port: 8222
server_name: $POD_NAME
include "nats-auth.conf"
jetstream {
  store_dir: /data/jetstream
}
"""


def tiny_run_config() -> dict:
    cfg = yaml.safe_load(yaml.safe_load((K8S / "base" / "run-config.yaml").read_text())["data"]["config.yaml"])
    cfg["nats"]["replicas"] = 1  # one NATS node
    return tiny_run(cfg, STEPS, PROMPTS)


def kube_overlay(root: Path, images: dict[str, str]) -> Path:
    """A kustomization over overlays/cpu-dev: the images built here, one NATS node, the tiny
    run, the NATS users' Secrets."""
    import sys

    sys.path.insert(0, str(K8S))
    from make_nats_secrets import make_secrets

    root.mkdir()
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(tiny_run_config()))
    (root / "secrets.yaml").write_text(yaml.safe_dump_all(make_secrets(NAMESPACE, RUN_ID, config)))
    (root / "run-config.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "meshrl-run-config"},
                "data": {"config.yaml": config.read_text()},
            }
        )
    )
    (root / "nats-config.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "nats-config"},
                "data": {"nats.conf": ONE_NODE_NATS},
            }
        )
    )
    (root / "one-nats.yaml").write_text(
        yaml.safe_dump(  # one node, as the meshrl image's user
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "nats"},
                "spec": {
                    "replicas": 1,
                    "template": {"spec": {"securityContext": {"runAsUser": UID, "runAsGroup": UID, "fsGroup": UID}}},
                },
            }
        )
    )
    name, tag = images["cpu"].rsplit(":", 1)
    nats_name, nats_tag = images["none"].rsplit(":", 1)
    return kustomization(
        root,
        resources=[K8S / "overlays" / "cpu-dev", root / "secrets.yaml"],
        images=[
            {"name": "meshrl", "newName": name, "newTag": tag},
            {"name": "nats", "newName": nats_name, "newTag": nats_tag},
        ],
        patches=[{"path": p} for p in ("run-config.yaml", "nats-config.yaml", "one-nats.yaml")],
    )


class Cluster:
    """One podman network, the claims as named volumes, the workloads played into it."""

    def __init__(self, plan: KubePlay, root: Path):
        self.plan, self.root = plan, root
        self.network = f"meshrl-kube-{uuid.uuid4().hex[:6]}"
        self.volumes: list[str] = []
        self.played: list[Path] = []

    def __enter__(self):
        podman("network", "create", self.network)
        return self

    def claim(self, name: str, owner: int, folder: str = "") -> Path:
        """The named volume a PersistentVolumeClaim `name` stands for, owned by `owner` (what
        fsGroup does in a cluster), holding `folder` so that podman does not copy the image's
        mount point (and its owner) into it on first use."""
        podman("volume", "rm", "-f", name, check=False)
        podman("volume", "create", "--label", f"meshrl-test={self.network}", name)
        self.volumes.append(name)
        path = Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", name).stdout.strip())
        for mine in [path, *([path / folder] if folder else [])]:
            mine.mkdir(exist_ok=True)
            os.chown(mine, owner, owner)
        return path

    def play(self, workload) -> None:
        path = self.root / f"{workload.name}.yaml"
        path.write_text(workload.yaml())
        aliases = ",".join(f"alias={a}" for a in workload.aliases)
        podman("kube", "play", "--network", f"{self.network}:{aliases}", str(path), timeout=300)
        self.played.append(path)

    def container(self, workload) -> str:
        return f"{workload.pod}-{workload.doc['spec']['template']['spec']['containers'][0]['name']}"

    def __exit__(self, *exc):
        for path in reversed(self.played):
            podman("kube", "down", str(path), check=False, timeout=300)
        config_maps = {c["metadata"]["name"] for w in self.plan.workloads for c in w.config_maps}
        volumes = [*self.volumes, *config_maps]  # kube play makes a volume per ConfigMap; down keeps it
        podman("volume", "rm", "-f", *volumes, check=False) if volumes else None
        podman("network", "rm", "-f", self.network, check=False)


def health(container: str) -> str:
    """What the pod's probe would get: `meshrl health` on its MESHRL_HEALTH_ADDRESS."""
    try:
        done = podman(
            "exec", container, "sh", "-c", 'meshrl health "$MESHRL_HEALTH_ADDRESS" --timeout 4', check=False, timeout=60
        )
    except subprocess.TimeoutExpired:
        return "podman exec took over 60 s"  # a loaded host; the probe is asked again
    return "SERVING" if done.returncode == 0 else (done.stdout + done.stderr).strip()


def wait_for(condition, timeout_s: float, what: str, logs) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{logs()}"
        time.sleep(3)


def podman_skips(docs: list[dict], root: Path) -> str:
    """podman's own answer to a file of only the kinds said to be ignored."""
    path = root / "ignored.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return podman("kube", "play", "--start=false", "--network", "none", str(path), check=False).stderr


def test_the_overlay_trains_under_podman_kube_play(tiny_model_dir, e2e_data, tmp_path, request, monkeypatch):
    require_image_tests("all")  # not in CI: see docs/image.md
    meshrl_image = request.getfixturevalue("meshrl_image")
    images = {"cpu": meshrl_image("cpu"), "none": meshrl_image("none")}
    docs = render(kube_overlay(tmp_path / "overlay", images))
    plan = KubePlay(docs, tmp_path / "files")
    by_name = {w.name: w for w in plan.workloads}
    skipped = podman_skips([d for d in docs if d["kind"] in IGNORED], tmp_path)
    monkeypatch.setenv(ENV_VAR, "")

    with Cluster(plan, tmp_path) as cluster:
        data = cluster.claim("meshrl-data", 10001)
        readable_copy(Path(tiny_model_dir), data / "model")
        readable_copy(Path(e2e_data["train"]), data / "train.jsonl")
        runs = cluster.claim("meshrl-runs", 10001)
        cluster.claim("data-nats-0", UID, "jetstream")  # the nats pod's user; its store_dir

        cluster.play(by_name["nats"])
        nats = cluster.container(by_name["nats"])
        wait_for(
            lambda: podman("logs", nats, check=False).stderr.count("Server is ready") > 0,
            120,
            "NATS",
            lambda: podman("logs", "--tail", "30", nats, check=False).stderr,
        )
        for name in ("learner", "reference", "reward", "rollout"):
            cluster.play(by_name[name])
        containers = {name: cluster.container(by_name[name]) for name in ("learner", "reference", "reward", "rollout")}
        logs = lambda: "\n".join(  # noqa: E731
            f"--- {n}\n" + podman("logs", "--tail", "25", c, check=False).stderr for n, c in containers.items()
        )
        probes: dict[str, str] = {}

        def all_serving() -> bool:
            probes.update({n: health(c) for n, c in containers.items() if probes.get(n) != "SERVING"})
            return all(v == "SERVING" for v in probes.values())

        wait_for(all_serving, 900, "every service to answer its probe", logs)
        metrics = runs / RUN_ID / "metrics.jsonl"
        wait_for(
            lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= STEPS,
            1200,
            f"{STEPS} training steps",
            logs,
        )
        wait_for(lambda: (runs / RUN_ID / "final").exists(), 300, "the final policy", logs)
        rows = [json.loads(x) for x in metrics.read_text().splitlines()]
        ledger = [json.loads(x) for x in (runs / RUN_ID / "groups.jsonl").read_text().splitlines()]
        advertised = podman("exec", containers["reward"], "printenv", "MESHRL_ADVERTISE_HOST").stdout.strip()

    assert plan.ignored.keys() == {
        "Namespace",
        "Service",
        "NetworkPolicy",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "StatefulSet",
    }, plan.ignored
    assert plan.ignored["StatefulSet"] == ["learner", "nats"]
    assert "does not contain any supported kube kind" in skipped, skipped
    assert len(rows) == STEPS
    report = prove_ledger(ledger, versions_at_step(rows))
    assert not report.problems, report.problems
    assert report.trained == STEPS * PROMPTS
    assert advertised == "@ip"
