"""Multi-host drill: the mesh across five "hosts" (network namespaces on one bridge), each
service started with the command and environment of deploy/compose/compose.yaml, talking
over IP (10.78.0.0/24), never localhost:

    nats 10.78.0.1 · learner .2 · rollout-a .3 · rollout-b .4 · reward .5

Weights travel through the NATS object store (no /dev/shm between hosts). Mid-run the
link of rollout-b is cut for a while and restored; the run must finish all its steps with
the ledger proving nothing lost and nothing trained twice, both rollout hosts having
served groups and loaded weights, and each replica announcing its own host's address.
NATS admits only compose's users (deploy/compose/make_nats_auth.py, made for the drill's run):
each service logs in with its own kind's file, as compose mounts it.

What the drill simplifies: the hosts share this machine's filesystem (the model, data and
run dir are at the same paths everywhere, as a shared volume would give), and the image's
entrypoint runs from the checkout instead of a container.

Two modes, one drill body (test ids `[netns]` and `[loopback]`); exactly one runs:
- netns: the hosts above, as namespaces (tests/deploy/netns.py); needs root and iproute2.
- loopback, where `ip netns add` is not permitted, or forced with MESHRL_DRILL_LOOPBACK=1:
  each host on its own address, nats 127.0.0.11 · learner .12 · rollout-a .13 · rollout-b
  .14 · reward .15, every service binding and announcing its own (MESHRL_BIND_HOST /
  MESHRL_ADVERTISE_HOST), NATS listening on its own (tests/deploy/loopback_hosts.py). No
  link can be cut without root: rollout-b is FROZEN instead (SIGSTOP of its processes for
  the same 15 s, then SIGCONT), which its peers see as a dead link (silence, redelivery
  after the ack wait) except that TCP connects to it still succeed. The test prints which
  (`-s`). CI runs as root, so CI runs the netns mode only: a forced loopback run would add
  about 155 s (measured here), over the 2.5 min it is worth; the loopback mode's own parts
  (addresses, environment, freeze) are tested in CI in a second by test_loopback_hosts.py.

    .venv/bin/python -m pytest -q tests/deploy/test_multihost_drill.py
    MESHRL_DRILL_LOOPBACK=1 .venv/bin/python -m pytest -q -s tests/deploy/test_multihost_drill.py
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import yaml

from meshrl.transport.bus.credentials import ENV_VAR
from meshrl.transport.bus.server import find_nats_server
from tests.chaos.ledger_proof import prove_ledger, versions_at_step
from tests.deploy.loopback_hosts import LoopbackHosts
from tests.deploy.netns import Hosts, available
from tests.deploy.test_compose_nats_auth import make_nats_auth, secret_file
from tests.e2e.conftest import VOWEL_REWARD, e2e_data  # noqa: F401  (e2e_data: a fixture)

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "compose" / "compose.yaml"
ENTRYPOINT = ROOT / "deploy" / "image" / "entrypoint.sh"
HOSTS = {"nats": 1, "learner": 2, "rollout-a": 3, "rollout-b": 4, "reward": 5}
STEPS = 10
LOOPBACK_ENV = "MESHRL_DRILL_LOOPBACK"  # =1: the loopback mode even where namespaces work

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def compose_service(
    name: str, substitutions: dict[str, str], secrets: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    """(command, environment) of a compose service, `${VAR:-default}` expanded; with `secrets`
    (the folder make_nats_auth.py wrote), /run/secrets/NAME becomes that secret's file there."""
    compose = yaml.safe_load(COMPOSE.read_text())

    def expand(value) -> str:
        value = re.sub(r"\$\{(\w+):-([^}]*)\}", lambda m: substitutions.get(m[1], m[2]), str(value))
        if secrets is not None and value.startswith("/run/secrets/"):
            return str(secret_file(compose, value.removeprefix("/run/secrets/"), secrets.parent))
        return value

    service = compose["services"][name]
    return [expand(a) for a in service["command"]], {k: expand(v) for k, v in service.get("environment", {}).items()}


def nats_users(folder: Path, run_id: str, config: Path) -> Path:
    """compose's NATS users for this run, made by deploy/compose/make_nats_auth.py in `folder`."""
    assert make_nats_auth.main(["--config", str(config), "--run-id", run_id, "--out", str(folder)]) == 0
    return folder


def nats_argv(store: Path, port: int, secrets: Path, address: str = "0.0.0.0") -> list[str]:
    """compose's nats command: its store in `store`, its users from `secrets`, on `address`:`port`."""
    command, _ = compose_service("nats", {}, secrets)
    args = [str(store) if flag == "--store_dir" else a for flag, a in zip(["", *command], command)]
    return [str(find_nats_server()), *args, "-a", address, "-p", str(port)]


def drill_config(model_dir: str, data: dict, run_dir: Path) -> dict:
    return {
        "run": {"name": "drill", "dir": str(run_dir)},
        "model": {"path": model_dir},
        "data": {"train": data["train"], "max_prompt_tokens": 128},
        "algorithm": {"preset": "grpo", "kl_coef": 0.0},  # β = 0: no reference service
        "reference": {"enabled": "off"},
        "rollout": {"sampling": {"group_size": 8, "max_tokens": 8}, "kv_cache_gb": 1.0, "max_model_len": 256},
        "reward": {"components": VOWEL_REWARD},
        "learner": {"steps": STEPS, "prompts_per_step": 4, "weights_transport": "objectstore", "checkpoint_every": 0},
        "trainer": {"micro_batch_size": 32, "optim": {"lr": 1e-3}},
    }


class Mesh:
    """The processes of the drill, each logging to RUN_DIR/../logs/<host>.log."""

    def __init__(
        self,
        hosts: Hosts,
        logs: Path,
        run_id: str,
        config: Path,
        env: dict[str, str] | None = None,
        secrets: Path | None = None,
    ):
        self.hosts, self.logs, self.procs = hosts, logs, {}
        self.substitutions = {"MESHRL_RUN_ID": run_id}
        self.config = config
        self.secrets = secrets  # make_nats_auth.py's folder: each service's own NATS user
        self.env = env or {}  # over every service's compose environment (netns.Loopback: the NATS url)

    def start(self, host: str, argv: list[str], env: dict[str, str]) -> None:
        log = (self.logs / f"{host}.log").open("ab")
        self.procs[host] = self.hosts.popen(
            host, argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def start_service(self, host: str, compose_name: str, grpc_port: int | None = None) -> None:
        """`grpc_port`: over the command's --grpc-port (several replicas on one address)."""
        command, env = compose_service(compose_name, self.substitutions, self.secrets)
        if grpc_port is not None:
            command[command.index("--grpc-port") + 1] = str(grpc_port)
        env = self.hosts.service_env(host, env)  # loopback: its own 127.0.0.x, NATS by address
        env.update(
            MESHRL_CONFIG=str(self.config),
            HOSTNAME=host,
            TOKENIZERS_PARALLELISM="false",
            OMP_NUM_THREADS="1",
            PYTHONUNBUFFERED="1",
            **self.env,
        )
        full = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", **env}
        self.start(host, ["sh", str(ENTRYPOINT), *command], full)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)

    def tail(self, host: str, n: int = 40) -> str:
        lines = (self.logs / f"{host}.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-n:])


def steps_done(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return len(path.read_text().splitlines()) if path.exists() else 0


def wait_for(condition, timeout_s: float, what: str, mesh: Mesh) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        dead = {h: p.returncode for h, p in mesh.procs.items() if p.poll() is not None}
        assert not dead, f"died while waiting for {what}: {dead}\n" + "\n".join(mesh.tail(h) for h in dead)
        assert time.monotonic() < deadline, f"timed out waiting for {what}\n{mesh.tail('learner')}"
        time.sleep(0.5)


async def announced(nats_url: str, run_id: str) -> dict[str, str]:
    from meshrl.transport.bus import Bus
    from meshrl.transport.bus.registry import service_entries

    async with await Bus.connect(nats_url, run_id, name="drill-check", timeout=5) as bus:
        return {
            e["replica"]: e["grpc"] for kind in ("rollout", "reward") for e in await service_entries(bus.state, kind)
        }


async def announced_so_far(nats_url: str, run_id: str) -> dict[str, str]:
    """`announced`, or nothing while the learner has not created the run's KV yet."""
    import nats.js.errors

    try:
        return await announced(nats_url, run_id)
    except nats.js.errors.NotFoundError:
        return {}


def skip_reason(mode: str) -> str | None:
    """Why the drill does not run in `mode` here (None: it does); one mode runs, never both."""
    forced, refused = os.environ.get(LOOPBACK_ENV) == "1", available()
    if mode == "netns" and forced:
        return f"{LOOPBACK_ENV}=1: the loopback mode runs instead"
    if mode == "netns" and refused:
        return f"no network namespaces ({refused}): the loopback mode runs instead"
    if mode == "loopback" and not (forced or refused):
        return f"network namespaces work here: the netns mode runs instead ({LOOPBACK_ENV}=1 forces this one)"
    return None


@pytest.fixture(params=["netns", "loopback"])
def hosts(request):
    reason = skip_reason(request.param)
    if reason:
        pytest.skip(reason)
    with Hosts(HOSTS) if request.param == "netns" else LoopbackHosts(HOSTS) as made:
        print(
            f"multi-host drill, {request.param} mode: hosts {[made.ip(h) for h in HOSTS]}; "
            f"the cut of rollout-b: {made.cut_means}"
        )
        yield made


def test_the_mesh_trains_across_hosts_and_survives_a_cut_link(hosts, tiny_model_dir, e2e_data, tmp_path, monkeypatch):
    run_id, run_dir, logs = f"drill-{uuid.uuid4().hex[:8]}", tmp_path / "run", tmp_path / "logs"
    logs.mkdir()
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(drill_config(str(tiny_model_dir), e2e_data, run_dir)))
    users = nats_users(tmp_path / "nats-auth", run_id, config)
    monkeypatch.setenv(ENV_VAR, str(users / "nats-admin.json"))  # this test's own checks (`announced`)
    mesh = Mesh(hosts, logs, run_id, config, secrets=users)
    try:
        mesh.start("nats", nats_argv(tmp_path / "nats-store", 4222, users, hosts.ip("nats")), dict(os.environ))
        for host, service in (("learner", "learner"), ("rollout-a", "rollout"), ("rollout-b", "rollout")):
            mesh.start_service(host, service)
        url = f"nats://{hosts.ip('nats')}:4222"
        # Nothing is scored, so no step trains, until the reward service starts: both rollout
        # replicas are in before the first step (else a fast learner can finish on one of them).
        wait_for(lambda: len(asyncio.run(announced_so_far(url, run_id))) == 2, 600, "both rollouts announced", mesh)
        mesh.start_service("reward", "reward")
        wait_for(lambda: steps_done(run_dir) >= 3, 600, "three steps", mesh)
        addresses = asyncio.run(announced(url, run_id))
        hosts.cut("rollout-b")
        assert hosts.is_cut("rollout-b", 50051), f"the cut ({hosts.cut_means}) did not cut rollout-b off"
        time.sleep(15)  # longer than a step: rollout-b's pulls and acks are lost meanwhile
        hosts.restore("rollout-b")
        assert not hosts.is_cut("rollout-b", 50051)
        mesh.procs["learner"].wait(timeout=600)
        assert mesh.procs["learner"].returncode == 0, mesh.tail("learner")
    finally:
        mesh.stop_all()

    assert addresses == {
        "rollout-a": f"{hosts.ip('rollout-a')}:50051",
        "rollout-b": f"{hosts.ip('rollout-b')}:50051",
        "reward": f"{hosts.ip('reward')}:50052",
    }
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(metrics) == STEPS
    ledger = [json.loads(x) for x in (run_dir / "groups.jsonl").read_text().splitlines()]
    report = prove_ledger(ledger, versions_at_step(metrics))
    assert not report.problems, report.problems
    assert report.trained == STEPS * 4
    trained_by = {e["replica"] for e in ledger if e["event"] == "trained"}
    loaded = {(e["replica"], e["version"]) for e in ledger if e["event"] == "weights_loaded" and e["ok"]}
    assert trained_by == {"rollout-a", "rollout-b"}, trained_by
    assert {r for r, _ in loaded} == {"rollout-a", "rollout-b"}
