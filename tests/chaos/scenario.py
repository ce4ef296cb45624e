"""One fault scenario on a real mesh: `meshrl train` on the tiny model, a fault at a seeded
moment of a seeded step, then everything the chaos tests judge.

    result = run_scenario(Fault("kill -9 reward", "reward-0"), tiny_model_dir, e2e_data, tmp_path)

The moment: step K (seeded, 1..STEPS-2) begins when metrics.jsonl holds K rows; the fault
comes a seeded 0..MAX_DELAY_S later. The seed is Fault.seed, or MESHRL_CHAOS_SEED when set
(printed, so a failure can be replayed). A fault is a signal to one process the launcher
started: a service replica (`--replica-id rollout-1`) or the embedded nats-server; or, with
`cluster=` (an external NatsCluster the run uses with JetStream replicas = 3), NATS_NODE:
SIGKILL of the cluster node the learner is connected to.

While the run goes, a watcher reads each stage's consumers from NATS once a second:
`delivered.consumer_seq - delivered.stream_seq` is how many deliveries were repeats
(JetStream counts every delivery, the stream each message once), and each stage stream's
leader (a cluster node; what a killed node led is reported).
"""
from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from meshrl.config.load import dump_config
from meshrl.ops.launch.nats import secrets_dir
from meshrl.transport.bus.client import server_urls
from meshrl.transport.bus.cluster import NatsCluster
from meshrl.transport.bus.credentials import credentials_path, read_credentials
from meshrl.transport.bus.subjects import STAGES, stage_stream
from tests.chaos.ledger_proof import LedgerReport, prove_ledger, versions_at_step
from tests.e2e.conftest import mesh_config

STEPS = 4
MAX_DELAY_S = 2.0
RUN_TIMEOUT_S = 600
# `meshrl train`, through its own subcommand module (cli/train.py: the launcher, as users run
# it) rather than the whole CLI, whose other subcommands are not what these tests judge.
MESHRL_TRAIN = [sys.executable, "-c", "import argparse, sys; from meshrl.ops.cli import train; "
                 "p = argparse.ArgumentParser(); train.add_parser(p.add_subparsers(dest='command')); "
                 "sys.exit(train.run(p.parse_args(sys.argv[1:])))", "train"]
NATS_NODE = "nats node of the learner"  # Fault.target: the cluster node the learner is connected to


@dataclass(frozen=True)
class Fault:
    name: str  # the table's row: "kill -9 reward"
    target: str  # "reward-0", "rollout-1", ..., "nats-server" or NATS_NODE (needs a cluster)
    sig: int = signal.SIGKILL
    resume_after_s: float | None = None  # SIGSTOP: SIGCONT after this long (None: never)
    seed: int = 0
    max_delay_s: float = MAX_DELAY_S  # the fault comes 0..this after its step began


@dataclass
class ScenarioResult:
    fault: Fault
    returncode: int
    stderr: str
    run_dir: Path
    fault_time: float
    metrics: list[dict]
    ledger: list[dict]
    restarts: list[dict]
    proof: LedgerReport
    redelivered: dict[str, int] = field(default_factory=dict)
    victim: str = ""  # what the fault hit: the target, or the cluster node (and what it led)

    def trained_after_fault(self, replica: str | None = None) -> list[dict]:
        return [e for e in self.ledger if e["event"] == "trained" and e["time"] > self.fault_time
                and (replica is None or e.get("replica") == replica)]

    def recovery_s(self) -> float | None:
        """From the fault to the first step finished after it."""
        after = self.trained_after_fault()
        return after[0]["time"] - self.fault_time if after else None


def rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def launched(proc: subprocess.Popen, target: str) -> psutil.Process:
    """The process the launcher started for `target` (its direct child)."""
    for child in psutil.Process(proc.pid).children():
        cmdline = " ".join(child.cmdline())
        if f"--replica-id {target}" in cmdline or (target == "nats-server" and "nats-server" in cmdline):
            return child
    raise AssertionError(f"no process for {target} under meshrl train ({proc.pid})")


def flag(process: psutil.Process, name: str) -> str:
    argv = process.cmdline()
    return argv[argv.index(name) + 1]


class RedeliveryWatch:
    """Polls every stage's consumers once a second in its own thread; keeps the last counts."""

    def __init__(self, url: str, run_id: str, run_dir: Path, embedded: bool = True):
        self.url, self.run_id, self.run_dir, self.embedded = url, run_id, run_dir, embedded
        self.counts: dict[str, int] = {}
        self.leaders: dict[str, str] = {}  # stage stream -> the cluster node leading it
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)
        self._thread.start()

    async def _watch(self) -> None:
        import nats

        nc = await nats.connect(server_urls(self.url), max_reconnect_attempts=-1, reconnect_time_wait=0.5,
                                **(self.admin_login() if self.embedded else {}))
        js = nc.jetstream()
        while not self._stop.is_set():
            for stage in STAGES:
                try:
                    stream = stage_stream(self.run_id, stage)
                    infos = await js.consumers_info(stream)
                    self.counts[stage] = sum(i.delivered.consumer_seq - i.delivered.stream_seq for i in infos)
                    cluster = (await js.stream_info(stream)).cluster
                    if cluster is not None and cluster.leader:
                        self.leaders[stage] = cluster.leader
                except Exception:  # NATS down (the nats-server fault) or the run ending: keep the last
                    pass
            await asyncio.sleep(1.0)
        await nc.close()

    def admin_login(self) -> dict[str, str]:
        """The embedded NATS admits only the run's users: log in as the launcher (admin)."""
        path = credentials_path(secrets_dir(self.run_dir), "admin")
        for _ in range(100):  # written when the launcher starts NATS
            if path.is_file():
                creds = read_credentials(path)
                return {"user": creds.user, "password": creds.password}
            time.sleep(0.1)
        return {}

    def stop(self) -> dict[str, int]:
        self._stop.set()
        self._thread.join(timeout=10)
        return dict(self.counts)


def wait_for(condition, proc: subprocess.Popen, what: str, timeout_s: float = 400) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert proc.poll() is None, f"meshrl train exited early with {proc.returncode} ({what})"
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout_s} s"
        time.sleep(0.2)


def strike(proc: subprocess.Popen, fault: Fault) -> float:
    """Send the fault's signal; for a SIGSTOP, a timer sends SIGCONT later. Returns when."""
    victim = launched(proc, fault.target)
    at = time.time()
    victim.send_signal(fault.sig)
    if fault.resume_after_s is not None:
        threading.Timer(fault.resume_after_s, lambda: victim.is_running() and victim.send_signal(signal.SIGCONT)).start()
    return at


def learners_node(cluster: NatsCluster, learner: psutil.Process) -> str:
    """The cluster node the learner's NATS connection goes to (its TCP peer on a client port)."""
    ports = {spec.client_port: spec.name for spec in cluster.specs}
    for conn in learner.net_connections(kind="tcp"):
        if conn.raddr and conn.raddr.port in ports and conn.status == psutil.CONN_ESTABLISHED:
            return ports[conn.raddr.port]
    raise AssertionError(f"learner {learner.pid} has no connection to a node of {cluster.url}")


def strike_node(proc: subprocess.Popen, cluster: NatsCluster, watch: RedeliveryWatch) -> tuple[float, str]:
    """SIGKILL the node the learner is connected to; returns when, and the node with what it led."""
    assert cluster is not None, f"{NATS_NODE!r}: run_scenario(..., cluster=NatsCluster(...)) is needed"
    wait_for(lambda: set(watch.leaders) == set(STAGES), proc, "every stage stream's leader to be read", 30)
    node = learners_node(cluster, launched(proc, "learner-0"))
    led = sorted(stage for stage, leader in watch.leaders.items() if leader == node)
    at = time.time()
    cluster.kill(node)
    return at, f"{node} (leading {', '.join(led) or 'no stage stream'})"


def moment(fault: Fault) -> tuple[int, float]:
    seed = int(os.environ.get("MESHRL_CHAOS_SEED", fault.seed))
    rng = random.Random(seed)
    step, delay = rng.randint(1, STEPS - 2), rng.uniform(0.0, fault.max_delay_s)
    print(f"\n{fault.name}: seed {seed} -> during step {step}, {delay:.2f} s after it began")
    return step, delay


def run_scenario(fault: Fault, model_dir, data, tmp_path: Path, *overrides: str,
                 cluster: NatsCluster | None = None) -> ScenarioResult:
    """Run `meshrl train` with `fault`; on `cluster` (every stream and bucket replicated on each
    node) instead of the embedded nats-server when given."""
    run_dir = tmp_path / "run"
    on_cluster = () if cluster is None else (f"nats.url={cluster.url}", f"nats.replicas={len(cluster.specs)}")
    cfg = mesh_config(model_dir, data, run_dir, f"learner.steps={STEPS}", "learner.prompts_per_step=2",
                      "launch.backoff_initial_s=1", *on_cluster, *overrides)
    (tmp_path / "config.yaml").write_text(dump_config(cfg))
    step, delay = moment(fault)
    proc = subprocess.Popen([*MESHRL_TRAIN, str(tmp_path / "config.yaml")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(rows(run_dir / "metrics.jsonl")) >= step, proc, f"step {step} to begin")
        learner = launched(proc, "learner-0")
        watch = RedeliveryWatch(flag(learner, "--nats"), flag(learner, "--run-id"), run_dir, embedded=cluster is None)
        time.sleep(delay)
        if fault.target == NATS_NODE:
            fault_time, victim = strike_node(proc, cluster, watch)
        else:
            fault_time, victim = strike(proc, fault), fault.target
        _, stderr = proc.communicate(timeout=RUN_TIMEOUT_S)
        redelivered = watch.stop()
    finally:
        proc.kill()
    metrics, ledger = rows(run_dir / "metrics.jsonl"), rows(run_dir / "groups.jsonl")
    return ScenarioResult(fault, proc.returncode, stderr, run_dir, fault_time, metrics, ledger,
                          rows(run_dir / "restarts.jsonl"),
                          prove_ledger(ledger, versions_at_step(metrics, cfg.learner.push_every)), redelivered,
                          victim)
