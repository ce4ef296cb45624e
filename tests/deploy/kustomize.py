"""Render a kustomize directory with kustomize itself (`kubectl kustomize`, as `kubectl apply -k`
would), for the tests of deploy/k8s; a kustomization a test writes names its resources by
path (made relative here: kustomize refuses absolute ones).

    docs = render(K8S / "overlays" / "gpu")              # list[dict], one per manifest
    docs = render(tmp_path)                              # a test's own kustomization.yaml

Where kubectl is not installed the k8s tests are skipped (`requires_kubectl`), naming why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

KUBECTL = shutil.which("kubectl")
requires_kubectl = pytest.mark.skipif(
    KUBECTL is None, reason="kubectl is not installed: its kustomize renders deploy/k8s (apt-get install kubectl)"
)


def kustomization(root: Path, **spec) -> Path:
    """Write root/kustomization.yaml from `spec`, its resources and components given as Paths."""
    for key in ("resources", "components"):
        if key in spec:
            spec[key] = [os.path.relpath(p, root) for p in spec[key]]
    (root / "kustomization.yaml").write_text(
        yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", **spec})
    )
    return root


def render(directory: str | Path) -> list[dict]:
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True)
    assert done.returncode == 0, f"kubectl kustomize {directory}: {done.stderr}"
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]
