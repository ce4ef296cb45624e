"""deploy/compose/compose.yaml, really up: podman-compose (PyPI, the test extra) brings the
file up against podman with the images build.sh made, the same commands a Docker user runs:

    MESHRL_IMAGE=... MESHRL_DATA_DIR=... podman-compose -p P -f compose.yaml up -d nats learner rollout reference
    podman-compose ... up -d --scale rollout=2 rollout          # a second replica joins
    podman-compose ... up -d reward gateway                     # scoring starts: the run trains
    podman-compose ... --profile observability up -d prometheus # scrapes every service

The run trains its steps, both rollout replicas train groups, the ledger proves nothing lost,
Prometheus (Debian's binary in a small image: no registry here) has every service's target
up, NATS and Prometheus are published on 127.0.0.1 only, and no service but the learner and
the gateway holds the run dir (each other kind has its own runs volume for its traces).

What is the test's and not the file's: the tiny model and data (MESHRL_DATA_DIR), a tiny run
config over run-config.yaml, NATS from the meshrl image (MESHRL_NATS_IMAGE: nats-server is in
it), the compose dir copied to a temp dir (its secrets are written there, not in the checkout),
and the health ticker: without systemd podman schedules no HEALTHCHECK, so the test runs each
container's own check every few seconds, as the timer would. Grafana is not started (no image).

    MESHRL_IMAGE_TESTS=all .venv/bin/python -m pytest -q -s tests/deploy/test_compose_up.py   # root; not in CI
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

from meshrl.inputs.checkpoint.key import KEY_NAME, key_pair
from tests.chaos.ledger_proof import prove_ledger, versions_at_step
from tests.deploy.test_image_mesh import UID, readable_copy, tiny_run
from tests.deploy.test_multihost_drill import nats_users
from tests.e2e.conftest import e2e_data  # noqa: F401  (a fixture)
from tests.fixtures.images import BASE, ROOT, meshrl_image, podman, require_image_tests  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]
STEPS = 6
PROMPTS = 4


def tiny_run_config(run_id: str) -> dict:
    """compose's run-config.yaml with the tiny model and a few steps; ports and addresses unchanged."""
    cfg = yaml.safe_load((ROOT / "deploy" / "compose" / "run-config.yaml").read_text())
    cfg["run"] = {"name": run_id, "dir": f"/runs/{run_id}"}
    return tiny_run(cfg, STEPS, PROMPTS)


def prometheus_image() -> str:
    """Debian's prometheus binary (scripts/test_tools.sh installs the package for promtool) in an
    image like prom/prometheus's: entrypoint the binary, user nobody, /prometheus its own."""
    tag = "localhost/meshrl-test-prometheus:debian"
    if podman("image", "exists", tag, check=False).returncode == 0:
        return tag
    context = Path(f"/tmp/meshrl-prometheus-{uuid.uuid4().hex[:6]}")
    context.mkdir()
    shutil.copy(shutil.which("prometheus"), context / "prometheus")
    (context / "Containerfile").write_text(
        f"FROM {BASE}\nCOPY prometheus /bin/prometheus\n"
        'RUN mkdir /prometheus && chown 65534:65534 /prometheus\nUSER 65534\nENTRYPOINT ["/bin/prometheus"]\n'
    )
    try:
        podman("build", "--network", "none", "-t", tag, str(context), timeout=300)
    finally:
        shutil.rmtree(context)
    return tag


class Project:
    """One compose project in a copy of deploy/compose: its env, commands and cleanup."""

    def __init__(self, root: Path, images: dict[str, str], data: Path):
        self.name = f"meshrl{uuid.uuid4().hex[:6]}"
        shutil.copytree(ROOT / "deploy" / "compose", root / "deploy" / "compose")
        shutil.copytree(ROOT / "deploy" / "observability", root / "deploy" / "observability")
        self.dir = root / "deploy" / "compose"
        self.config = self.dir / "run-config.yaml"
        self.config.write_text(yaml.safe_dump(tiny_run_config(self.name)))
        self.config.chmod(0o644)
        users = nats_users(self.dir / "nats-auth", self.name, self.config)
        for path in users.iterdir():  # the meshrl image runs as 10001, NATS included here
            os.chown(path, UID, UID)
        for path in key_pair(self.dir / "checkpoint-key" / KEY_NAME):  # the learner's and the gateway's
            os.chown(path, UID, UID)
        tokens = self.dir / "gateway-tokens.yaml"
        tokens.write_text(yaml.safe_dump({"tokens": [{"name": "ci", "role": "viewer", "token": uuid.uuid4().hex}]}))
        tokens.chmod(0o600)
        os.chown(tokens, UID, UID)
        self.env = {
            **os.environ,
            "MESHRL_IMAGE": images["cpu"],
            "MESHRL_NATS_IMAGE": images["none"],
            "MESHRL_PROMETHEUS_IMAGE": images["prometheus"],
            "MESHRL_DATA_DIR": str(data),
            "MESHRL_RUN_ID": self.name,
        }

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        tool = shutil.which("podman-compose", path=str(Path(sys.executable).parent)) or "podman-compose"
        done = subprocess.run(
            [tool, "-p", self.name, "-f", str(self.dir / "compose.yaml"), *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
            cwd=self.dir,
        )
        assert done.returncode == 0, f"podman-compose {' '.join(args)}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def down(self) -> None:
        """compose down, then whatever it left (podman-compose 1.6 leaves a --scale replica and
        a container_name'd service): the project's containers, volumes and network."""
        try:
            self.compose("--profile", "observability", "down", "-v", "-t", "10")
        finally:
            names = [c["Names"][0] for c in self.containers()]
            podman("rm", "-f", "-t", "5", *names, check=False, timeout=300) if names else None
            volumes = podman("volume", "ls", "-q", "--filter", f"name={self.name}_", check=False).stdout.split()
            podman("volume", "rm", "-f", *volumes, check=False) if volumes else None
            podman("network", "rm", "-f", f"{self.name}_default", check=False)

    def containers(self, service: str | None = None) -> list[dict]:
        label = [f"label=io.podman.compose.project={self.name}"]
        if service:
            label.append(f"label=io.podman.compose.service={service}")
        args = ["ps", "-a", "--format", "json", *[x for f in label for x in ("--filter", f)]]
        return json.loads(podman(*args).stdout or "[]")

    def healthy(self, service: str) -> int:
        return sum(
            1
            for c in self.containers(service)
            if "healthy" in c.get("Status", "") and "unhealthy" not in c.get("Status", "")
        )

    def volume_path(self, volume: str) -> Path:
        return Path(podman("volume", "inspect", "--format", "{{.Mountpoint}}", f"{self.name}_{volume}").stdout.strip())

    def logs(self, service: str) -> str:
        return "\n".join(
            podman("logs", "--tail", "30", c["Names"][0], check=False).stderr for c in self.containers(service)
        )


class HealthTicker(threading.Thread):
    """Runs every running container's HEALTHCHECK every `period` s (systemd's job, absent here)."""

    def __init__(self, project: Project, period: float = 15.0):  # compose.yaml's interval
        super().__init__(daemon=True)
        self.project, self.period, self.stop = project, period, threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                for c in self.project.containers():
                    if c.get("State") == "running":
                        podman("healthcheck", "run", c["Names"][0], check=False, timeout=60)
            except subprocess.TimeoutExpired:
                pass  # podman busy (a storage lock): the timer tries again next period
            self.stop.wait(self.period)


def wait_for(condition, timeout_s: float, what: str, project: Project, show: str = "learner") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{project.logs(show)}"
        time.sleep(2)


def targets(port: int = 9090) -> list[dict]:
    """Prometheus's active targets; none while it is not answering yet."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/targets", timeout=5) as reply:
            return json.load(reply)["data"]["activeTargets"]
    except OSError:
        return []


def up_targets(scraped: list[dict]) -> set[tuple[str, str]]:
    return {(t["labels"].get("service"), t["labels"].get("instance")) for t in scraped if t["health"] == "up"}


def every_replica_up(scraped: list[dict]) -> bool:
    """What the test asserts of Prometheus: every service scraped, both rollout replicas among them
    (the second replica's target can come up a scrape after the first)."""
    up = up_targets(scraped)
    services = {service for service, _ in up}
    return services >= {"learner", "rollout", "reward", "reference"} and sum(s == "rollout" for s, _ in up) == 2


def published(container: str) -> list[str]:
    return podman("port", container).stdout.split()


def test_compose_trains_scales_and_is_scraped(tiny_model_dir, e2e_data, tmp_path, request):
    require_image_tests("all")  # not in CI: see docs/image.md
    meshrl_image = request.getfixturevalue("meshrl_image")
    images = {"cpu": meshrl_image("cpu"), "none": meshrl_image("none"), "prometheus": prometheus_image()}
    data = readable_copy(Path(tiny_model_dir), tmp_path / "data" / "model").parent
    readable_copy(Path(e2e_data["train"]), data / "train.jsonl")
    project = Project(tmp_path, images, data)
    ticker = HealthTicker(project)
    ticker.start()
    try:
        project.compose("up", "-d", "--no-build", "nats", "learner", "rollout", "reference")
        wait_for(lambda: project.healthy("rollout") == 1, 900, "the first rollout replica", project, "rollout")
        project.compose("up", "-d", "--no-build", "--scale", "rollout=2", "rollout")
        wait_for(lambda: project.healthy("rollout") == 2, 900, "the second rollout replica", project, "rollout")
        project.compose("up", "-d", "--no-build", "reward", "gateway")
        project.compose("--profile", "observability", "up", "-d", "--no-build", "prometheus")
        seen: list[list[dict]] = [[]]  # the targets that met the wait are the ones asserted on
        wait_for(
            lambda: every_replica_up(seen.append(targets()) or seen[-1]),
            180,
            "Prometheus to scrape every service and both rollout replicas",
            project,
        )
        scraped = seen[-1]
        nats_ports, prometheus_ports = (
            published("meshrl-nats"),
            published(project.containers("prometheus")[0]["Names"][0]),
        )
        rollout_mounts = podman(
            "inspect", "--format", "{{range .Mounts}}{{.Name}} {{end}}", project.containers("rollout")[0]["Names"][0]
        ).stdout.split()
        run_dir = project.volume_path("runs") / project.name
        wait_for(
            lambda: [c["State"] for c in project.containers("learner")] == ["exited"],
            1200,
            "the learner to finish its steps",
            project,
        )
        learner = json.loads(podman("inspect", project.containers("learner")[0]["Names"][0]).stdout)[0]["State"]
        rollout_traces = sorted(
            p.name for p in (project.volume_path("rollout-runs") / project.name / "traces").iterdir()
        )
        metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
        ledger = [json.loads(x) for x in (run_dir / "groups.jsonl").read_text().splitlines()]
    finally:
        ticker.stop.set()
        ticker.join(timeout=60)
        project.down()

    assert learner["ExitCode"] == 0
    assert len(metrics) == STEPS
    report = prove_ledger(ledger, versions_at_step(metrics))
    assert not report.problems, report.problems
    trained_by = {e["replica"] for e in ledger if e["event"] == "trained"}
    assert len(trained_by) == 2, f"both rollout replicas train groups: {trained_by}"
    up = up_targets(scraped)
    assert sum(1 for s, _ in up if s == "rollout") == 2, up
    assert nats_ports == ["4222/tcp", "->", "127.0.0.1:4222"], nats_ports
    assert prometheus_ports == ["9090/tcp", "->", "127.0.0.1:9090"], prometheus_ports
    assert f"{project.name}_runs" not in rollout_mounts and f"{project.name}_rollout-runs" in rollout_mounts
    assert rollout_traces and all(name.startswith("rollout-") for name in rollout_traces), rollout_traces
