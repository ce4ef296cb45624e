"""deploy/k8s: every overlay renders with kustomize itself (`kubectl kustomize`,
tests/deploy/kustomize.py), validates offline (kubernetes-validate --strict; KEDA ScaledObjects against
deploy/k8s/schemas/), and agrees with the code: container args and flags with the services'
argparse, probe and Service ports with the run config, KEDA streams and consumers with the bus
names, NetworkPolicies with exactly the data flow.

    .venv/bin/python -m pytest -q tests/deploy/test_k8s.py
kubernetes-validate comes from the test extra (pyproject.toml).
"""

import importlib
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from meshrl.config import load_config
from meshrl.transport.bus.subjects import stage_stream
from tests.deploy.contract import ENTRYPOINT_ENV, grpc_port, serve_argv
from tests.deploy.kustomize import render, requires_kubectl

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
sys.path.insert(0, str(K8S / "components" / "tls"))
make_secrets = importlib.import_module("make_secrets").make_secrets
pytestmark = requires_kubectl
OVERLAYS = {"cpu-dev": ("meshrl-dev", "meshrl:cpu"), "gpu": ("meshrl", "meshrl:cuda")}
COMPONENTS = ["components/reward-external-egress"]
WORKER_MODULES = {
    "rollout": "meshrl.services.rollout.worker",
    "reward": "meshrl.services.reward.worker",
    "reference": "meshrl.services.reference.worker",
}
SAMPLE_POD = "{name}-5f7b9c6d4-x2k94"  # a Deployment pod's name: random suffix, digits at the end


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request):
    return request.param, render(K8S / "overlays" / request.param)


def by_kind(docs, kind):
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == kind}


def workloads(docs):
    return {**by_kind(docs, "Deployment"), **by_kind(docs, "StatefulSet")}


def meshrl_containers(docs):
    for name, w in workloads(docs).items():
        for c in w["spec"]["template"]["spec"]["containers"]:
            if c["image"].split(":")[0] == "meshrl":
                yield name, w, c


def run_config(docs):
    text = by_kind(docs, "ConfigMap")["meshrl-run-config"]["data"]["config.yaml"]
    return load_config(base=yaml.safe_load(text))


def env_of(container, pod_name):
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    env["POD_NAME"] = pod_name
    return {
        k: re.sub(r"\$\((\w+)\)", lambda m: str(env.get(m.group(1))), v) if isinstance(v, str) else v
        for k, v in env.items()
    }


def probe_port(probe) -> int:
    """The gRPC port a probe checks: native (`grpc.port`) or `meshrl health 127.0.0.1:PORT` (exec)."""
    if "grpc" in probe:
        return probe["grpc"]["port"]
    command = probe["exec"]["command"]
    assert command[:2] == ["meshrl", "health"] and command[2].startswith("127.0.0.1:"), command
    return int(command[2].split(":")[1])


def test_every_overlay_and_component_validates_strictly(tmp_path):
    tool = shutil.which("kubernetes-validate", path=str(Path(sys.executable).parent)) or shutil.which(
        "kubernetes-validate"
    )
    assert tool, "kubernetes-validate is missing: `bash scripts/setup.sh` installs it (test extra)"
    files = []
    for name in [*(f"overlays/{o}" for o in OVERLAYS), *COMPONENTS]:
        docs = [d for d in render(K8S / name) if d["apiVersion"] != "keda.sh/v1alpha1"]
        files.append(tmp_path / f"{name.replace('/', '-')}.yaml")
        files[-1].write_text(yaml.safe_dump_all(docs))
    files.append(tmp_path / "tls-secrets.yaml")  # what components/tls/make_secrets.py prints
    files[-1].write_text(yaml.safe_dump_all(make_secrets("meshrl")))
    done = subprocess.run([tool, "--strict", "--quiet", *map(str, files)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Couldn't find schema" not in done.stdout + done.stderr


def test_scaled_objects_validate_against_the_committed_schema():
    schema = json.loads((K8S / "schemas" / "keda-scaledobject-v1alpha1.json").read_text())
    objects = list(by_kind(render(K8S / "overlays" / "gpu"), "ScaledObject").values())
    assert sorted(o["metadata"]["name"] for o in objects) == ["reference", "reward", "rollout"]
    for o in objects:
        jsonschema.validate(o, schema)
    broken = json.loads(json.dumps(objects[0]))
    broken["spec"]["triggers"][0]["metadata"]["lagTreshold"] = "5"  # a typo is caught
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_render_applies_namespace_image_and_patches(overlay):
    name, docs = overlay
    namespace, image = OVERLAYS[name]
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"] == [namespace]
    for d in docs:
        if d["kind"] != "Namespace":
            assert d["metadata"]["namespace"] == namespace, d["metadata"]
            assert d["metadata"]["labels"]["app.kubernetes.io/part-of"] == "meshrl"
    assert {c["image"] for _, _, c in meshrl_containers(docs)} == {image}
    gpus = {n: c["resources"]["limits"].get("nvidia.com/gpu") for n, _, c in meshrl_containers(docs)}
    expected = {"rollout": "1", "learner": "1"} if name == "gpu" else {}
    assert {n: g for n, g in gpus.items() if g} == expected


def test_vllm_cpu_binding_is_a_value_vllm_takes(overlay):
    """VLLM_CPU_OMP_THREADS_BIND: auto, nobind or CPU id lists joined by | (vLLM 0.32's
    utils/ompmultiprocessing.py); cpu-dev's `all` crashed the engine core under podman kube
    play (tests/deploy/test_kube_play.py)."""
    _, docs = overlay
    for name, _, container in meshrl_containers(docs):
        for var in container.get("env", []):
            if var["name"] == "VLLM_CPU_OMP_THREADS_BIND":
                assert re.fullmatch(r"auto|nobind|[\d,-]+(\|[\d,-]+)*", var["value"]), (name, var)


def test_commands_env_ports_and_probes_match_the_cli(overlay):
    _, docs = overlay
    cfg = run_config(docs)
    services = {s["metadata"]["name"]: s for s in by_kind(docs, "Service").values()}
    seen = set()
    for name, w, c in meshrl_containers(docs):
        service, flags = serve_argv(c["args"])
        seen.add(service)
        pod = f"{name}-0" if w["kind"] == "StatefulSet" else SAMPLE_POD.format(name=name)
        env = env_of(c, pod)
        assert all(env.get(k) for k in ENTRYPOINT_ENV), f"{name}: {env}"
        assert env["MESHRL_NATS_URL"] == cfg.nats.url
        mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in w["spec"]["template"]["spec"]["volumes"]}
        config_dir = str(Path(env["MESHRL_CONFIG"]).parent)
        assert volumes[mounts[config_dir]]["configMap"]["name"] == "meshrl-run-config"
        port = grpc_port(service, flags, cfg, env.get("MESHRL_REPLICA_ID") or pod)
        assert env["MESHRL_HEALTH_ADDRESS"] == f"127.0.0.1:{port}"
        probes = [c[p] for p in ("startupProbe", "readinessProbe", "livenessProbe") if p in c]
        assert probes, name
        if w["kind"] == "Deployment":  # native gRPC probes on the grpc port; with TLS `meshrl health` there
            ports = {p["name"]: p["containerPort"] for p in c["ports"]}
            assert ports["grpc"] == port and {probe_port(p) for p in probes} == {port}, name
            assert {"readinessProbe", "livenessProbe"} <= set(c)
            svc_ports = {p["name"]: p for p in services[name]["spec"]["ports"]}
            assert services[name]["spec"]["clusterIP"] == "None" and svc_ports["grpc"]["port"] == port
        else:  # the learner's server is on 127.0.0.1: `meshrl health` inside the pod
            assert {tuple(p["exec"]["command"][:3]) for p in probes} == {("meshrl", "health", f"127.0.0.1:{port}")}
    assert seen == {"rollout", "reward", "reference", "learner"}
    assert cfg.reference.resolved_address == f"reference:{cfg.reference.grpc_port}"
    assert cfg.learner.weights_transport == "objectstore"  # pods share no /dev/shm


def test_learner_runs_torchrun_with_a_headless_rendezvous(overlay):
    _, docs = overlay
    sts = by_kind(docs, "StatefulSet")["learner"]
    c = sts["spec"]["template"]["spec"]["containers"][0]
    args = dict(a.lstrip("-").split("=", 1) for a in shlex.split(env_of(c, "learner-0")["MESHRL_TORCHRUN_ARGS"]))
    service = by_kind(docs, "Service")[sts["spec"]["serviceName"]]
    assert service["spec"]["clusterIP"] == "None"
    assert args["master-addr"] == f"learner-0.{sts['spec']['serviceName']}"
    assert int(args["master-port"]) == {p["name"]: p["port"] for p in service["spec"]["ports"]}["rendezvous"]
    assert int(args["nnodes"]) == sts["spec"]["replicas"]
    assert int(args["nproc-per-node"]) == int(c["resources"]["limits"].get("nvidia.com/gpu", 1))
    assert args["node-rank"] == "None"  # $(POD_INDEX) comes from the downward API, not a literal
    assert any(e["name"] == "POD_INDEX" and "pod-index" in e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"])


def test_a_rollout_pod_requests_a_gpu_per_tensor_parallel_worker(overlay):
    """rollout.tensor_parallel_size workers per replica, one GPU each: the rollout pod's GPU
    request must equal it wherever the overlay requests GPUs (overlays/gpu/gpu-rollout.yaml)."""
    name, docs = overlay
    c = by_kind(docs, "Deployment")["rollout"]["spec"]["template"]["spec"]["containers"][0]
    gpus = c.get("resources", {}).get("limits", {}).get("nvidia.com/gpu")
    if gpus is not None:
        assert int(gpus) == run_config(docs).rollout.tensor_parallel_size, name


def test_keda_scales_each_worker_on_its_own_stream_and_consumer():
    docs = render(K8S / "overlays" / "gpu")
    namespace = OVERLAYS["gpu"][0]
    run_ids = {env_of(c, "x")["MESHRL_RUN_ID"] for _, _, c in meshrl_containers(docs)}
    assert len(run_ids) == 1
    run_id = run_ids.pop()
    monitor = by_kind(docs, "Service")["nats"]
    monitor_port = {p["name"]: p["port"] for p in monitor["spec"]["ports"]}["monitor"]
    for name, obj in by_kind(docs, "ScaledObject").items():
        worker = importlib.import_module(WORKER_MODULES[name])
        stage = getattr(worker, "IN_STAGE", None) or worker.STAGE
        meta = obj["spec"]["triggers"][0]["metadata"]
        assert obj["spec"]["triggers"][0]["type"] == "nats-jetstream"
        assert (meta["stream"], meta["consumer"]) == (stage_stream(run_id, stage), worker.DURABLE)
        assert meta["natsServerMonitoringEndpoint"] == f"nats.{namespace}.svc.cluster.local:{monitor_port}"
        assert obj["spec"]["scaleTargetRef"]["name"] in by_kind(docs, "Deployment")


def test_autoscalers_target_real_deployments_and_never_two_on_one(overlay):
    _, docs = overlay
    targets = [
        d["spec"]["scaleTargetRef"]["name"] for d in docs if d["kind"] in ("HorizontalPodAutoscaler", "ScaledObject")
    ]
    assert sorted(targets) == ["reference", "reward", "rollout"]
    assert set(targets) <= set(by_kind(docs, "Deployment"))


def test_nats_is_a_three_node_jetstream_cluster(overlay):
    _, docs = overlay
    sts = by_kind(docs, "StatefulSet")["nats"]
    replicas = sts["spec"]["replicas"]
    conf = by_kind(docs, "ConfigMap")["nats-config"]["data"]["nats.conf"]
    assert replicas == 3 and run_config(docs).nats.replicas <= replicas
    assert re.search(r"jetstream \{\s*store_dir: /data/", conf)
    assert [v["metadata"]["name"] for v in sts["spec"]["volumeClaimTemplates"]] == ["data"]
    routes = re.findall(r"nats://(nats-\d+)\.(\S+):6222", conf)
    assert routes == [(f"nats-{i}", sts["spec"]["serviceName"]) for i in range(replicas)]
    assert by_kind(docs, "PodDisruptionBudget")["nats"]["spec"]["minAvailable"] == replicas // 2 + 1


def test_disruption_budgets_select_real_pods_and_secrets_are_files(overlay):
    _, docs = overlay
    pods = {n: w["spec"]["template"]["metadata"]["labels"] for n, w in workloads(docs).items()}
    for name, pdb in by_kind(docs, "PodDisruptionBudget").items():
        sel = pdb["spec"]["selector"]["matchLabels"]
        assert any(sel.items() <= labels.items() for labels in pods.values()), name
    assert set(by_kind(docs, "PodDisruptionBudget")) >= {"nats", "rollout", "reward", "reference"}
    for name, w, c in meshrl_containers(docs):
        volumes = {v["name"]: v for v in w["spec"]["template"]["spec"]["volumes"]}
        secret_mounts = [m for m in c["volumeMounts"] if "secret" in volumes[m["name"]]]
        assert secret_mounts and all(m["readOnly"] for m in secret_mounts), name
        assert not any("secretKeyRef" in e.get("valueFrom", {}) for e in c["env"]), name
        pvcs = {v["persistentVolumeClaim"]["claimName"] for v in volumes.values() if "persistentVolumeClaim" in v}
        assert "meshrl-runs" in pvcs and pvcs <= set(by_kind(docs, "PersistentVolumeClaim")), name


def test_the_learner_alone_mounts_the_checkpoint_key_it_points_at(overlay):
    """The signing key comes from a Secret made once (`meshrl checkpoints key`), so a restarted
    learner pod signs with the key it resumed from; no other pod gets it."""
    _, docs = overlay
    holders = []
    for name, w, c in meshrl_containers(docs):
        volumes = {v["name"]: v for v in w["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: volumes[m["name"]] for m in c.get("volumeMounts", [])}
        env = {e["name"]: e.get("value") for e in c["env"]}
        keyed = [p for p, v in mounts.items() if v.get("secret", {}).get("secretName") == "meshrl-checkpoint-key"]
        if keyed:
            holders.append(name)
            assert env["MESHRL_CHECKPOINT_KEY_FILE"] == f"{keyed[0]}/checkpoint-signing.key", name
    assert holders == ["learner"]


def allowed_flows(docs):
    """{(from, to, port)} between the workloads' pods that the NetworkPolicies allow."""
    pods = {
        n: (
            w["spec"]["template"]["metadata"]["labels"],
            {p["containerPort"] for c in w["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])},
        )
        for n, w in workloads(docs).items()
    }
    policies = list(by_kind(docs, "NetworkPolicy").values())

    def selects(selector, labels):
        return selector.get("matchLabels", {}).items() <= labels.items()

    def permits(direction, peer_key, pod, peer, port):
        for pol in policies:
            if not selects(pol["spec"]["podSelector"], pods[pod][0]):
                continue
            for rule in pol["spec"].get(direction, []):
                peers = rule.get(peer_key)
                in_peers = peers is None or any(
                    "podSelector" in p and "namespaceSelector" not in p and selects(p["podSelector"], pods[peer][0])
                    for p in peers
                )
                ports = rule.get("ports")
                if in_peers and (ports is None or any(p["port"] == port for p in ports)):
                    return True
        return False

    return {
        (a, b, port)
        for a in pods
        for b in pods
        for port in pods[b][1]
        if permits("egress", "to", a, b, port) and permits("ingress", "from", b, a, port)
    }


def test_network_policies_allow_exactly_the_data_flow(overlay):
    _, docs = overlay
    cfg = run_config(docs)
    learner_ports = {
        p["containerPort"] for p in workloads(docs)["learner"]["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    expected = {(s, "nats", 4222) for s in ("learner", "rollout", "reward", "reference")}
    expected |= {
        ("nats", "nats", 6222),
        ("learner", "reference", cfg.reference.grpc_port),
        ("learner", "rollout", cfg.rollout.grpc_port),
        ("learner", "reward", 50052),
    }
    expected |= {("learner", "learner", p) for p in learner_ports}
    assert allowed_flows(docs) == expected
    assert by_kind(docs, "NetworkPolicy")["default-deny"]["spec"] == {
        "podSelector": {},
        "policyTypes": ["Ingress", "Egress"],
    }
    assert "reward-external-egress" not in by_kind(docs, "NetworkPolicy")  # only where configured


def test_reward_external_egress_component_targets_reward_only():
    (policy,) = render(K8S / "components" / "reward-external-egress")
    assert policy["spec"]["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "reward"}
    assert policy["spec"]["policyTypes"] == ["Egress"] and "ipBlock" in policy["spec"]["egress"][0]["to"][0]
