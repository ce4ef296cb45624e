"""A rendered meshrl overlay, played by podman 4.3's `kube play` (Debian bookworm's podman, the
nearest thing to a cluster on this host), and exactly what that runtime does not do.

    plan = KubePlay(docs, files_dir)        # docs: `kubectl kustomize OVERLAY`, parsed
    plan.ignored                            # {"NetworkPolicy": [...], "Service": [...], ...}
    for workload in plan.workloads:         # each as podman can play it, with its Service names
        podman kube play --network NET:alias=A,alias=B workload.yaml

What podman 4.3 plays: Pod, Deployment, PersistentVolumeClaim, ConfigMap (and Secret, though
not as volumes, below). Every other kind of the overlay it skips without a word:
Namespace, Service, NetworkPolicy, HorizontalPodAutoscaler, PodDisruptionBudget (and KEDA's
ScaledObject) -- those stay validated as before by tests/deploy/test_k8s*.py -- and StatefulSet,
which NATS and the learner are. Measured here (podman 4.3.1), and done instead:

- StatefulSet: played as a Deployment of the same pod template with one replica, the pod
  labelled apps.kubernetes.io/pod-index=0 as the StatefulSet controller labels its pod, each
  volumeClaimTemplate as the claim `<template>-<set>-0` it would have made.
- Service: no cluster DNS; each workload joins one podman network with the name of every
  Service that selects its pods as a network alias (and `<set>-0.<service>` for a
  StatefulSet's headless Service), which is what cluster DNS answers.
- env from status.podIP: refused ("not valid or not supported"); MESHRL_ADVERTISE_HOST=$(POD_IP)
  becomes `@ip`, meshrl's own "this container's address" (meshrl/transport/addresses.py).
- $(VAR) references in env values: not expanded; expanded here as the kubelet does, from the
  container's earlier variables (a fieldRef to metadata.name is the pod name podman gives,
  `<workload>-pod-0`; one to a label is the label's value).
- secret volumes: podman 4.3 mounts a Secret's `data` still base64-encoded, `stringData` as
  nothing, and crashes without `optional` (podman#16636); projected volumes are not
  supported. Each becomes a hostPath directory holding the decoded files, 0400 and owned by
  the container's user (what defaultMode and fsGroup give in a cluster).
- containerPort: published on the host by podman 4.3 as if it were a hostPort, so two pods'
  metrics ports (9464) collide: dropped (in a cluster it is informational: pods reach each
  other on the pod network, as they do on the podman network here).
- the pod's securityContext (runAsUser, runAsGroup, fsGroup, ...): ignored; runAsUser and
  runAsGroup are copied onto each container, where podman honours them.
- probes: startupProbe, readinessProbe and gRPC probes are ignored; without systemd no probe
  runs on a schedule anyway, so the test asks `meshrl health` in the container (as the
  probes would) -- the probes stay checked by test_k8s.py against the CLI.
- emptyDir: an anonymous volume owned by root, 0755 (a cluster's emptyDir is 0777), so vLLM,
  as uid 10001, cannot make its shared memory in the rollout's /dev/shm ("Permission denied:
  '/psm_...'"): a hostPath directory, 1777, instead (on disk, as podman's would be too, where
  a cluster's medium Memory is a tmpfs).
Left as podman does them: resources.limits become cgroup limits.
"""

from __future__ import annotations

import base64
import copy
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

PLAYED = {"Pod", "Deployment", "PersistentVolumeClaim", "ConfigMap"}
IGNORED = {
    "Namespace",
    "Service",
    "NetworkPolicy",
    "HorizontalPodAutoscaler",
    "PodDisruptionBudget",
    "ScaledObject",
    "StatefulSet",
}  # podman 4.3 skips these kinds without a word
OWN_ADDRESS = "@ip"  # MESHRL_ADVERTISE_HOST's "the address of this container"
VAR_REF = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


@dataclass
class Workload:
    name: str
    doc: dict  # a Deployment podman 4.3 plays
    config_maps: list[dict]  # the ConfigMaps its volumes name (played with it)
    aliases: list[str]  # the DNS names cluster Services give its pod
    claims: list[str] = field(default_factory=list)  # PersistentVolumeClaims it mounts

    @property
    def pod(self) -> str:
        return f"{self.name}-pod-0"  # podman's name for a Deployment's first pod

    def yaml(self) -> str:
        return yaml.safe_dump_all([*self.config_maps, self.doc], sort_keys=False)


class KubePlay:
    def __init__(self, docs: list[dict], files_dir: Path):
        self.docs, self.files_dir = docs, files_dir
        kinds = {doc["kind"] for doc in docs}
        unknown = kinds - PLAYED - IGNORED - {"Secret"}
        assert not unknown, f"a kind this plan does not know: {unknown}"
        self.ignored = {
            kind: sorted(d["metadata"]["name"] for d in docs if d["kind"] == kind) for kind in sorted(kinds & IGNORED)
        }
        self.secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
        self.config_maps = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ConfigMap"}
        self.services = [d for d in docs if d["kind"] == "Service"]
        self.claims = [d["metadata"]["name"] for d in docs if d["kind"] == "PersistentVolumeClaim"]
        self.workloads = [self.workload(d) for d in docs if d["kind"] in ("Deployment", "StatefulSet")]

    def workload(self, doc: dict) -> Workload:
        doc = copy.deepcopy(doc)
        name, template = doc["metadata"]["name"], doc["spec"]["template"]
        claim_names = []
        if doc["kind"] == "StatefulSet":
            claim_names = self.as_deployment(doc)
        spec = template["spec"]
        self.user_on_containers(spec)
        self.files_for_volumes(name, spec)
        for container in spec["containers"]:
            container["env"] = expand_env(container.get("env", []), f"{name}-pod-0", template["metadata"]["labels"])
            container.pop("ports", None)
        used = [v["configMap"]["name"] for v in spec.get("volumes", []) if "configMap" in v]
        claim_names += [
            v["persistentVolumeClaim"]["claimName"]
            for v in spec.get("volumes", [])
            if "persistentVolumeClaim" in v and v["persistentVolumeClaim"]["claimName"] not in claim_names
        ]
        return Workload(name, doc, [self.config_maps[c] for c in used], self.aliases(doc, template), claim_names)

    @staticmethod
    def as_deployment(doc: dict) -> list[str]:
        """The StatefulSet's pod as a one-replica Deployment; returns the claims it made."""
        name, spec = doc["metadata"]["name"], doc["spec"]
        doc["kind"] = "Deployment"
        spec["replicas"] = 1
        spec["template"]["metadata"]["labels"]["apps.kubernetes.io/pod-index"] = "0"
        claims = []
        for claim in spec.pop("volumeClaimTemplates", []):
            claims.append(f"{claim['metadata']['name']}-{name}-0")
            spec["template"]["spec"].setdefault("volumes", []).append(
                {"name": claim["metadata"]["name"], "persistentVolumeClaim": {"claimName": claims[-1]}}
            )
        for key in ("serviceName", "podManagementPolicy", "updateStrategy"):
            spec.pop(key, None)
        return claims

    def aliases(self, doc: dict, template: dict) -> list[str]:
        labels, names = template["metadata"]["labels"], []
        for service in self.services:
            selector = service["spec"].get("selector") or {}
            if selector and all(labels.get(k) == v for k, v in selector.items()):
                names.append(service["metadata"]["name"])
                if labels.get("apps.kubernetes.io/pod-index") == "0" and service["spec"].get("clusterIP") == "None":
                    names.append(f"{doc['metadata']['name']}-0.{service['metadata']['name']}")
        return names

    @staticmethod
    def user_on_containers(spec: dict) -> None:
        pod = spec.pop("securityContext", {}) or {}
        for container in spec["containers"]:
            own = container.setdefault("securityContext", {})
            for key in ("runAsUser", "runAsGroup"):
                if key in pod:
                    own.setdefault(key, pod[key])

    def files_for_volumes(self, workload: str, spec: dict) -> None:
        """emptyDir -> a hostPath dir anyone may write (1777); secret and projected volumes ->
        hostPath dirs of the decoded files, 0400, owned by the container's user."""
        user = spec["containers"][0]["securityContext"].get("runAsUser", 10001)
        group = spec["containers"][0]["securityContext"].get("runAsGroup", user)
        for volume in spec.get("volumes", []):
            if "emptyDir" in volume:
                volume.pop("emptyDir")
                folder = self.files_dir / workload / volume["name"]
                folder.mkdir(parents=True)
                folder.chmod(0o1777)
                volume["hostPath"] = {"path": str(folder), "type": "Directory"}
            if "secret" in volume or "projected" in volume:
                sources = (
                    [{"secret": volume.pop("secret")}] if "secret" in volume else volume.pop("projected")["sources"]
                )
                folder = self.files_dir / workload / volume["name"]
                folder.mkdir(parents=True)
                for source in sources:
                    for name, data in self.source_files(source).items():
                        (folder / name).write_bytes(data)
                        (folder / name).chmod(0o400)
                        os.chown(folder / name, user, group)
                os.chown(folder, user, group)
                volume["hostPath"] = {"path": str(folder), "type": "Directory"}

    def source_files(self, source: dict) -> dict[str, bytes]:
        if "configMap" in source:
            return {k: v.encode() for k, v in self.config_maps[source["configMap"]["name"]]["data"].items()}
        ref = source["secret"]
        secret = self.secrets.get(ref.get("secretName") or ref.get("name"))
        if secret is None:
            assert ref.get("optional"), f"Secret {ref} is missing and not optional"
            return {}
        return {k: base64.b64decode(v) for k, v in secret.get("data", {}).items()} | {
            k: v.encode() for k, v in secret.get("stringData", {}).items()
        }


def expand_env(env: list[dict], pod_name: str, labels: dict) -> list[dict]:
    """The container's env with $(VAR) expanded as the kubelet does, status.podIP replaced."""
    known: dict[str, str] = {}
    out = []
    for var in env:
        if "valueFrom" in var:
            path = var["valueFrom"].get("fieldRef", {}).get("fieldPath", "")
            if path == "status.podIP":
                continue  # refused by podman 4.3; MESHRL_ADVERTISE_HOST says @ip instead
            if path == "metadata.name":
                known[var["name"]] = pod_name
            elif path.startswith("metadata.labels["):
                known[var["name"]] = labels[path.split("'")[1]]
            out.append(var)
            continue
        value = var.get("value", "")
        if var["name"] == "MESHRL_ADVERTISE_HOST" and value == "$(POD_IP)":
            value = OWN_ADDRESS
        value = VAR_REF.sub(lambda m: known.get(m.group(1), m.group(0)), value)
        known[var["name"]] = value
        out.append({"name": var["name"], "value": value})
    return out
