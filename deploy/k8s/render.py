"""Render a kustomize directory (an overlay) to plain manifests, without the kustomize binary.

    python deploy/k8s/render.py deploy/k8s/overlays/gpu > gpu.yaml      # then kubectl apply -f
    python deploy/k8s/render.py deploy/k8s/overlays/cpu-dev

Does the part of kustomize these files use, the same way: `resources` (files, and directories
with their own kustomization.yaml, depth first), `components` (a `kind: Component` directory:
its resources are added and its patches applied to what the including kustomization has so
far), `labels` (pairs added to metadata.labels), `images` (name → newName:newTag), `patches`
with `path` (strategic merge, matched by kind and name: maps merge, a key set to null is
removed, lists of maps with a `name` merge by name, other lists are replaced, `$patch:
delete` removes the resource), `namespace` (set on every namespaced resource).
Anything else in a kustomization.yaml is an error, so a file this cannot render is never
half-rendered. tests/deploy/test_k8s.py renders every overlay with it.
"""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import yaml

KNOWN_KEYS = {"apiVersion", "kind", "resources", "components", "labels", "images", "patches", "namespace"}
CLUSTER_SCOPED = {"Namespace", "PersistentVolume", "StorageClass", "ClusterRole", "ClusterRoleBinding",
                  "CustomResourceDefinition", "PriorityClass"}


def load_docs(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render(directory: str | Path, into: list[dict] | None = None) -> list[dict]:
    """Every resource the kustomization in `directory` produces, in order. `into`: what the
    kustomization including this Component has so far (a Component only works on that)."""
    directory = Path(directory)
    spec = load_docs(directory / "kustomization.yaml")[0]
    unknown = set(spec) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"{directory}/kustomization.yaml: render.py does not handle {sorted(unknown)}")
    if (spec.get("kind") == "Component") != (into is not None):
        raise ValueError(f"{directory}: a kind: Component goes under `components:`, anything else under `resources:`")
    docs: list[dict] = list(into or [])
    for entry in spec.get("resources", []):
        target = directory / entry
        docs += render(target) if target.is_dir() else load_docs(target)
    for entry in spec.get("components", []):
        docs = render(directory / entry, into=docs)
    for pair in spec.get("labels", []):
        for doc in docs:
            doc.setdefault("metadata", {}).setdefault("labels", {}).update(pair["pairs"])
    for patch in spec.get("patches", []):
        for p in load_docs(directory / patch["path"]):
            docs = apply_patch(docs, p)
    for image in spec.get("images", []):
        for doc in docs:
            set_image(doc, image)
    if "namespace" in spec:
        for doc in docs:
            if doc["kind"] not in CLUSTER_SCOPED:
                doc["metadata"]["namespace"] = spec["namespace"]
    return docs


def apply_patch(docs: list[dict], patch: dict) -> list[dict]:
    key = (patch["kind"], patch["metadata"]["name"])
    matches = [d for d in docs if (d["kind"], d["metadata"]["name"]) == key]
    if len(matches) != 1:
        raise ValueError(f"patch {key} matches {len(matches)} resources, not 1")
    if patch.get("$patch") == "delete":
        return [d for d in docs if d is not matches[0]]
    merged = merge(matches[0], patch)
    return [merged if d is matches[0] else d for d in docs]


def merge(base, patch):
    """Strategic merge as far as these files need it."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for k, v in patch.items():
            if v is None:  # strategic merge: null deletes the key
                out.pop(k, None)
            else:
                out[k] = merge(base[k], v) if k in base else copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(patch, list) and all(
            isinstance(x, dict) and "name" in x for x in base + patch):
        out = [copy.deepcopy(x) for x in base]
        for item in patch:
            at = [i for i, x in enumerate(out) if x["name"] == item["name"]]
            if at:
                out[at[0]] = merge(out[at[0]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def set_image(node, image: dict) -> None:
    """Replace `image: NAME[:tag]` anywhere under node, as kustomize's images transformer."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "image" and isinstance(v, str) and v.split(":")[0] == image["name"]:
                node[k] = f"{image.get('newName', image['name'])}:{image.get('newTag', 'latest')}"
            else:
                set_image(v, image)
    elif isinstance(node, list):
        for item in node:
            set_image(item, image)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    yaml.safe_dump_all(render(argv[0]), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
