"""The mesh trains from its own image: NATS, learner, rollout, reward and reference, each in its
own podman container from the images deploy/image/build.sh built (rollout from `cpu`, the
others from `none`), as uid 10001 with a read-only root filesystem, the tiny model and data
mounted read-only, each service's NATS user mounted as a secret file, only the learner
mounting the run dir read-write (the others get its traces/ folder alone). Mid-run the reward
container's process is SIGKILLed from the host and the runtime restarts it (--restart
on-failure); the run finishes its steps and the ledger proves nothing lost or trained twice.
Every service's HEALTHCHECK (the image's `meshrl health` on its MESHRL_HEALTH_ADDRESS) passes
once it is READY, and after the restart the reward's, rollout's and reference's again.

    .venv/bin/python -m pytest -q -s tests/deploy/test_image_mesh.py     # root; builds the images once

Networking: --network host, each container on its own loopback address 127.<b>.0.<n> (the
block b random per run) binding and announcing it (MESHRL_BIND_HOST / _ADVERTISE_HOST), the
loopback mode of the multi-host drill: no bridge state is left on the host. -s prints each
service's start-to-READY seconds (docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import time
import uuid
from pathlib import Path

import pytest
import yaml

from meshrl.transport.bus import Bus
from meshrl.transport.bus.credentials import ENV_VAR
from tests.chaos.ledger_proof import prove_ledger, versions_at_step
from tests.deploy.containers import Containers
from tests.deploy.test_multihost_drill import nats_users
from tests.e2e.conftest import VOWEL_REWARD, e2e_data  # noqa: F401  (e2e_data: a fixture)
from tests.fixtures.images import meshrl_image  # noqa: F401  (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]

UID = 10001
STEPS = 8  # enough that the reward restart (~40 s) lands mid-run: no step trains unscored
PROMPTS = 4
HOSTS = {"nats": 1, "learner": 2, "rollout": 3, "reward": 4, "reference": 5}
PORTS = {"rollout": 50051, "reward": 50052, "reference": 50053, "learner": 50054}


def own(path: Path, mode: int = 0o700) -> Path:
    """`path` made for the image's user: owned by 10001, `mode`."""
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, UID, UID)
    path.chmod(mode)
    return path


def readable_copy(source: Path, target: Path) -> Path:
    """A world-readable copy (pytest's temp dirs are root's 0700): what a read-only volume holds."""
    shutil.copytree(source, target) if source.is_dir() else shutil.copy(source, target)
    for path in [target, *target.rglob("*")] if target.is_dir() else [target]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def tiny_run(cfg: dict, steps: int, prompts: int = PROMPTS) -> dict:
    """A run config (compose's, Kubernetes', this test's) made the tiny run: the tiny model and
    data under /data, `steps` steps; its ports and addresses unchanged."""
    cfg["model"] = {"path": "/data/model"}
    cfg["data"] = {"train": "/data/train.jsonl", "max_prompt_tokens": 128}
    cfg["rollout"].update(sampling={"group_size": 8, "max_tokens": 8}, kv_cache_gb=1.0, max_model_len=256)
    cfg["reward"] = {"components": VOWEL_REWARD}
    cfg["learner"].update(steps=steps, prompts_per_step=prompts, checkpoint_every=0)
    cfg["trainer"] = {"micro_batch_size": 32, "optim": {"lr": 1e-3}}
    return cfg


def mesh_config(addresses: dict[str, str], run_dir: str, steps: int = STEPS) -> dict:
    return tiny_run(
        {
            "run": {"name": "imagemesh", "dir": run_dir},
            "algorithm": {"preset": "grpo"},  # kl_coef 0.04: the reference service is used
            "reference": {"grpc_port": PORTS["reference"], "address": f"{addresses['reference']}:{PORTS['reference']}"},
            "rollout": {"grpc_port": PORTS["rollout"]},
            "learner": {"grpc_port": PORTS["learner"], "weights_transport": "objectstore"},
            "nats": {"url": f"nats://{addresses['nats']}:4222"},
            "telemetry": {"metrics_port": 9464},
        },
        steps,
    )


class ImageMesh:
    """The files and containers of one run: paths on the host, mounts and env per service."""

    def __init__(self, box: Containers, root: Path, model_dir: Path, train: Path, steps: int = STEPS):
        block = random.randint(100, 250)
        self.box, self.run_id = box, box.label
        self.ip = {name: f"127.{block}.0.{n}" for name, n in HOSTS.items()}
        self.data = readable_copy(model_dir, root / "data" / "model").parent
        readable_copy(Path(train), self.data / "train.jsonl")
        self.runs = own(root / "runs")
        self.run_dir = own(self.runs / "imagemesh")
        self.traces = own(self.run_dir / "traces")
        self.config = root / "config" / "config.yaml"
        self.config.parent.mkdir()
        self.config.write_text(yaml.safe_dump(mesh_config(self.ip, "/runs/imagemesh", steps)))
        self.config.chmod(0o644)
        self.secrets = nats_users(root / "secrets", self.run_id, self.config)
        for kind in HOSTS:
            if (self.secrets / f"nats-{kind}.json").exists():
                os.chown(self.secrets / f"nats-{kind}.json", UID, UID)
        os.chown(self.secrets / "nats-auth.conf", UID, UID)
        self.nats_store = own(root / "nats")
        self.started: dict[str, float] = {}

    def common(self) -> list[str]:
        return [
            "--network",
            "host",
            "--read-only",
            "--user",
            f"{UID}:{UID}",
            "--shm-size",
            "1g",
            "--cap-drop",
            "all",
            "--security-opt",
            "no-new-privileges",
        ]

    def start_nats(self, image: str) -> None:
        self.box.run(
            "nats",
            image,
            [
                "nats-server",
                "--config",
                "/run/secrets/nats-auth.conf",
                "--jetstream",
                "--store_dir",
                "/nats",
                "-a",
                self.ip["nats"],
                "-p",
                "4222",
                "--http_port",
                "8222",
                "--server_name",
                "nats-0",
            ],
            mounts=[f"{self.secrets / 'nats-auth.conf'}:/run/secrets/nats-auth.conf:ro", f"{self.nats_store}:/nats"],
            options=[*self.common(), "--no-healthcheck"],
        )
        self.started["nats"] = time.monotonic()

    def start_service(self, kind: str, image: str, threads: dict[str, str] | None = None) -> None:
        """`threads`: OpenMP/vLLM binding variables in place of one thread each (a benchmark's)."""
        ip, port = self.ip[kind], PORTS[kind]
        env = {
            "MESHRL_NATS_URL": f"nats://{self.ip['nats']}:4222",
            "MESHRL_RUN_ID": self.run_id,
            "MESHRL_CONFIG": "/etc/meshrl/config.yaml",
            "MESHRL_BIND_HOST": ip,
            "MESHRL_ADVERTISE_HOST": ip,
            "MESHRL_HEALTH_ADDRESS": f"{ip}:{port}",  # every gRPC server binds MESHRL_BIND_HOST
            ENV_VAR: "/run/secrets/nats.json",
            "MESHRL_REPLICA_ID": f"{kind}-0",
            "OMP_NUM_THREADS": "1",
            "TOKENIZERS_PARALLELISM": "false",
            **(threads or {}),
        }
        run_mount = (
            f"{self.runs}:/runs" if kind == "learner" else f"{self.traces}:/runs/imagemesh/traces"
        )  # least privilege: traces alone
        mounts = [
            f"{self.config}:/etc/meshrl/config.yaml:ro",
            f"{self.data}:/data:ro",
            f"{self.secrets / f'nats-{kind}.json'}:/run/secrets/nats.json:ro",
            run_mount,
        ]
        command = [kind] if kind in ("learner", "reference") else [kind, "--grpc-port", str(port)]
        self.box.run(
            kind, image, command, env=env, mounts=mounts, options=[*self.common(), "--restart", "on-failure:3"]
        )
        self.started[kind] = time.monotonic()

    def steps_done(self) -> int:
        path = self.run_dir / "metrics.jsonl"
        return len(path.read_text().splitlines()) if path.exists() else 0

    def rows(self, name: str) -> list[dict]:
        return [json.loads(x) for x in (self.run_dir / name).read_text().splitlines()]


async def nats_answers(url: str, admin: Path) -> bool:
    os.environ[ENV_VAR] = str(admin)
    try:
        async with await Bus.connect(url, "probe", name="image-mesh-probe", timeout=2):
            return True
    except Exception:  # noqa: BLE001 - not up yet, whatever the reason
        return False


def ready_seconds(mesh: ImageMesh, kinds: list[str]) -> dict[str, float]:
    """Seconds from each container's start to its first healthy HEALTHCHECK."""
    ready: dict[str, float] = {}
    last: dict[str, str] = {}
    deadline = time.monotonic() + 900
    while len(ready) < len(kinds):
        for kind in set(kinds) - set(ready):
            last[kind] = mesh.box.health(kind, retries=1)
            if last[kind] == "healthy":
                ready[kind] = round(time.monotonic() - mesh.started[kind], 1)
            elif mesh.box.state(kind)["Status"] == "exited":
                raise AssertionError(
                    f"{kind} exited before its health check passed ({last[kind]}):\n{mesh.box.logs(kind)}"
                )
        assert time.monotonic() < deadline, f"not READY in 900 s: { ({k: last[k] for k in set(kinds) - set(ready)}) }"
        time.sleep(2)
    return ready


def test_the_mesh_trains_from_its_image_and_survives_a_killed_container(
    meshrl_image, tiny_model_dir, e2e_data, tmp_path, monkeypatch
):
    none, cpu = meshrl_image("none"), meshrl_image("cpu")
    monkeypatch.setenv(ENV_VAR, "")
    with Containers(f"imgmesh-{uuid.uuid4().hex[:6]}") as box:
        mesh = ImageMesh(box, tmp_path, Path(tiny_model_dir), Path(e2e_data["train"]))
        mesh.start_nats(none)
        url = f"nats://{mesh.ip['nats']}:4222"
        box.wait_for(
            lambda: asyncio.run(nats_answers(url, mesh.secrets / "nats-admin.json")), 60, "NATS", show=("nats",)
        )
        mesh.started["nats_ready"] = round(time.monotonic() - mesh.started["nats"], 1)
        for kind, image in (("learner", none), ("rollout", cpu), ("reference", none), ("reward", none)):
            mesh.start_service(kind, image)
        ready = ready_seconds(mesh, ["rollout", "reward", "reference", "learner"])
        print(f"start to READY, seconds: nats {mesh.started['nats_ready']}, {ready}")
        box.wait_for(lambda: mesh.steps_done() >= 1, 600, "the first step", show=("learner", "rollout", "reward"))

        killed = box.kill_process("reward")
        steps_at_kill = mesh.steps_done()
        box.wait_for(lambda: box.restarts("reward") >= 1, 120, "the runtime to restart reward", show=("rollout",))
        box.wait_for(
            lambda: box.health("reward") == "healthy", 300, "the restarted reward to be healthy", show=("rollout",)
        )
        # the learner was healthy at READY; once scoring resumes it may finish its steps at once
        health = {kind: box.health(kind) for kind in ("rollout", "reference", "reward")}
        whoami = box.exec("reward", ["id", "-u"]).stdout.strip()
        write = box.exec("reward", ["touch", "/opt/meshrl/planted"])
        box.wait_for(
            lambda: box.state("learner")["Status"] == "exited", 900, "the learner to finish", show=("rollout", "reward")
        )
        learner = box.state("learner")
        assert learner["ExitCode"] == 0, box.logs("learner")

    assert health == dict.fromkeys(health, "healthy"), health
    assert killed > 0 and steps_at_kill < STEPS, f"the kill came after the run ({steps_at_kill} steps)"
    metrics, ledger = mesh.rows("metrics.jsonl"), mesh.rows("groups.jsonl")
    assert len(metrics) == STEPS
    report = prove_ledger(ledger, versions_at_step(metrics))
    assert not report.problems, report.problems
    assert report.trained == STEPS * PROMPTS
    traces = sorted(p.name.split("-")[0] for p in mesh.traces.glob("*.jsonl"))
    assert {"rollout", "reward", "learner"} <= set(traces), traces
    assert whoami == str(UID)
    assert write.returncode != 0 and "Read-only file system" in write.stderr, write
