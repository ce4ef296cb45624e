"""One fault scenario on a real mesh: `meshrl train` on the tiny model, a fault at a seeded
moment of a seeded step, then everything the chaos tests judge.

    result = run_scenario(Fault("kill -9 reward", "reward-0"), tiny_model_dir, e2e_data, tmp_path)
    first, second = run_faults([fault_a, fault_b], tiny_model_dir, e2e_data, tmp_path, steps=60, span=2)

The moment: step K (seeded, 1..steps/3; or Fault.step) begins when metrics.jsonl holds K
rows; the fault comes a seeded 0..MAX_DELAY_S later. The seed is Fault.seed, or
MESHRL_CHAOS_SEED when set (printed, so a failure can be replayed). Several faults share one
run (run_faults: one mesh start-up for all): each strikes at a seeded step of the `span`
after the run recovered from the one before (recovered(): the target back, and trained
again), so no two overlap; each fault's result judges its own time window, from its strike
to the next one.

A fault is a signal to one process the launcher started: a service replica (`--replica-id
rollout-1`) or the embedded nats-server; or, with `cluster=` (an external NatsCluster the run
uses with JetStream replicas = 3), NATS_NODE: SIGKILL of the cluster node the learner is
connected to, made first the leader of every stage stream and of the run-state KV (a leader
step-down with that node preferred): the worst single loss, the same one each time.

While the run goes, a watcher reads each stage's consumers from NATS once a second:
`delivered.consumer_seq - delivered.stream_seq` is how many deliveries were repeats
(JetStream counts every delivery, the stream each message once).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

from meshrl.config.load import dump_config
from meshrl.run.secrets import secrets_dir
from meshrl.transport.bus.client import server_urls
from meshrl.transport.bus.cluster import NatsCluster
from meshrl.transport.bus.credentials import credentials_path, read_credentials
from meshrl.transport.bus.subjects import STAGES, kv_bucket, stage_stream
from tests.chaos.ledger_proof import LedgerReport, prove_ledger, superseded_trainings, versions_at_step
from tests.e2e.conftest import mesh_config

# A tiny-model step takes ~0.2 s once the mesh is up, so a run of 4 steps was over before a
# fault 2 s into step 1 landed (the kill then hit a run that had finished). 12 steps, the
# fault within the first third and at most 0.5 s into its step: >= 7 steps still to go.
STEPS = 12
MAX_DELAY_S = 0.5
MIN_STEPS_AFTER = 5  # steps a fault leaves at least after its own (else: raise steps) to show the recovery
RUN_TIMEOUT_S = 600
# `meshrl train`, through its own subcommand module (cli/train.py: the launcher, as users run
# it) rather than the whole CLI, whose other subcommands are not what these tests judge.
MESHRL_TRAIN = [
    sys.executable,
    "-c",
    "import argparse, sys; from meshrl.cli import train; "
    "p = argparse.ArgumentParser(); train.add_parser(p.add_subparsers(dest='command')); "
    "sys.exit(train.run(p.parse_args(sys.argv[1:])))",
    "train",
]
NATS_NODE = "nats node of the learner"  # Fault.target: the cluster node the learner is connected to


@dataclass(frozen=True)
class Fault:
    name: str  # the table's row: "kill -9 reward"
    target: str  # "reward-0", "rollout-1", ..., "nats-server" or NATS_NODE (needs a cluster)
    sig: int = signal.SIGKILL
    resume_after_s: float | None = None  # SIGSTOP: SIGCONT after this long (None: never)
    seed: int = 0
    max_delay_s: float = MAX_DELAY_S  # the fault comes 0..this after its step began
    step: int | None = None  # during this step (None: a seeded one)
    # After the delay, also wait until when(run_dir) is true (e.g. the target holds an open
    # episode), polled every 20 ms, so the fault lands mid-work; None: strike at once.
    when: Callable[[Path], bool] | None = None


@dataclass
class ScenarioResult:
    """What one fault did. A run of several faults gives one each, sharing the run's files
    (returncode, metrics, ledger, proof) and judged within its own window [since, until): from
    its strike (the run's start for the first) to the next fault's (the end for the last)."""

    fault: Fault
    returncode: int
    stderr: str
    run_dir: Path
    fault_time: float
    metrics: list[dict]
    ledger: list[dict]
    restarts: list[dict]  # the launcher's restarts within the window
    proof: LedgerReport  # the whole run's
    redelivered: dict[str, int] = field(default_factory=dict)  # repeat deliveries within the window
    victim: str = ""  # what the fault hit: the target, or the cluster node (and what it led)
    since: float = 0.0
    until: float = math.inf

    def in_window(self, events: list[dict]) -> list[dict]:
        return [e for e in events if self.since <= e["time"] < self.until]

    def trained_after_fault(self, replica: str | None = None) -> list[dict]:
        return [
            e
            for e in self.in_window(self.ledger)
            if e["event"] == "trained"
            and e["time"] > self.fault_time
            and (replica is None or e.get("replica") == replica)
        ]

    def recovery_s(self) -> float | None:
        """From the fault to the first step finished after it."""
        after = self.trained_after_fault()
        return after[0]["time"] - self.fault_time if after else None

    def dropped(self) -> Counter:
        """Groups dropped within the window, by reason (the proof's count for a one-fault run)."""
        return Counter(e["reason"] or "(no reason)" for e in self.in_window(self.ledger) if e["event"] == "dropped")

    def steps_lost(self) -> list[int]:
        """Steps trained again after a learner resume within the window."""
        lost_before = superseded_trainings([e for e in self.ledger if e["time"] < self.since])[1]
        lost_by_end = superseded_trainings([e for e in self.ledger if e["time"] < self.until])[1]
        return [step for step in lost_by_end if step not in lost_before]


def rows(path: Path) -> list[dict]:
    """A JSON-lines file's rows; a last line still being written (no newline yet) is left out:
    the run's files are read while it writes them."""
    text = path.read_text() if path.exists() else ""
    return [json.loads(x) for x in text[: text.rfind("\n") + 1].splitlines() if x.strip()]


def launched(proc: subprocess.Popen, target: str) -> psutil.Process:
    """The process the launcher started for `target` (its direct child)."""
    for child in psutil.Process(proc.pid).children():
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.Error:  # exited (a zombie until the launcher reaps it): not the target
            continue
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
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)
        self._thread.start()

    async def _watch(self) -> None:
        import nats

        async def quiet(_err: Exception) -> None:  # NATS down is a fault under test, not news
            pass

        nc = await nats.connect(
            server_urls(self.url),
            max_reconnect_attempts=-1,
            reconnect_time_wait=0.5,
            error_cb=quiet,
            **(self.admin_login() if self.embedded else {}),
        )
        js = nc.jetstream()
        while not self._stop.is_set():
            for stage in STAGES:
                try:
                    infos = await js.consumers_info(stage_stream(self.run_id, stage))
                    self.counts[stage] = sum(i.delivered.consumer_seq - i.delivered.stream_seq for i in infos)
                except Exception:  # NATS down (the nats-server fault) or the run ending: keep the last
                    pass
            await asyncio.sleep(1.0)
        try:
            await nc.close()
        except ConnectionError:  # the run's NATS went away first: nothing left to close
            pass

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
        time.sleep(0.02)  # a step takes ~0.2 s: poll well within one


def strike(proc: subprocess.Popen, fault: Fault) -> float:
    """Send the fault's signal; for a SIGSTOP, a timer sends SIGCONT later. Returns when."""
    victim = launched(proc, fault.target)
    at = time.time()
    victim.send_signal(fault.sig)
    if fault.resume_after_s is not None:
        threading.Timer(
            fault.resume_after_s, lambda: victim.is_running() and victim.send_signal(signal.SIGCONT)
        ).start()
    return at


def learners_node(proc: subprocess.Popen, cluster: NatsCluster) -> str | None:
    """The cluster node the learner's NATS connection goes to (its TCP peer on a client port)."""
    ports = {spec.client_port: spec.name for spec in cluster.specs}
    try:
        connections = launched(proc, "learner-0").net_connections(kind="tcp")
    except (AssertionError, psutil.Error):  # not started yet
        return None
    for conn in connections:
        if conn.raddr and conn.raddr.port in ports and conn.status == psutil.CONN_ESTABLISHED:
            return ports[conn.raddr.port]
    return None


async def lead_from(url: str, streams: list[str], node: str, timeout_s: float = 30.0) -> None:
    """Make `node` the leader of each stream: a step-down with it preferred (nats-server >= 2.11)."""
    import nats

    nc = await nats.connect(server_urls(url))
    js, deadline = nc.jetstream(), time.monotonic() + timeout_s
    try:
        for stream in streams:
            while (await js.stream_info(stream)).cluster.leader != node:
                assert time.monotonic() < deadline, f"{node} did not become the leader of {stream}"
                await nc.request(
                    f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}",
                    json.dumps({"placement": {"preferred": node}}).encode(),
                    timeout=5,
                )
                await asyncio.sleep(0.5)
    finally:
        await nc.close()


def aim_at_learners_node(proc: subprocess.Popen, cluster: NatsCluster | None) -> str:
    """Once the learner is connected: make its node the leader of every stage stream and the
    run-state KV (the launcher created them before any service). Fast when it already is."""
    assert cluster is not None, f"{NATS_NODE!r}: run_scenario(..., cluster=NatsCluster(...)) is needed"
    wait_for(lambda: learners_node(proc, cluster), proc, "the learner to connect to the cluster")
    node, run_id = learners_node(proc, cluster), flag(launched(proc, "learner-0"), "--run-id")
    streams = [stage_stream(run_id, stage) for stage in STAGES] + [f"KV_{kv_bucket(run_id)}"]
    asyncio.run(lead_from(cluster.url, streams, node))
    return node


def strike_node(proc: subprocess.Popen, cluster: NatsCluster) -> tuple[float, str]:
    """SIGKILL the learner's node, leader of everything the run uses; returns when and which."""
    node = aim_at_learners_node(proc, cluster)  # again: still so at the moment of the fault
    at = time.time()
    cluster.kill(node)
    return at, f"{node}: the learner's node, leader of {', '.join([*STAGES, 'the run KV'])}"


def moment(fault: Fault, steps: int = STEPS, after: int = 0, span: int | None = None) -> tuple[int, float]:
    """The fault's step (a seeded one of after+1..after+span; span: the first third of the run)
    and its delay into that step."""
    seed = int(os.environ.get("MESHRL_CHAOS_SEED", fault.seed))
    rng = random.Random(seed)
    step, delay = after + rng.randint(1, span or max(1, steps // 3)), rng.uniform(0.0, fault.max_delay_s)
    step = step if fault.step is None else fault.step
    print(f"\n{fault.name}: seed {seed} -> during step {step}, {delay:.2f} s after it began")
    return step, delay


@dataclass
class Strike:
    """One fault as it happened: when, what it hit, the watch's redelivery counts at that moment."""

    fault: Fault
    time: float
    victim: str
    redelivered: dict[str, int]


def back_at(strike: Strike, run_dir: Path) -> float | None:
    """When the fault's target was back: its SIGCONT, or the launcher's restart of it (None: not
    yet); a lost cluster node is not restarted: the cluster goes on at once."""
    fault = strike.fault
    if fault.resume_after_s is not None:
        return strike.time + fault.resume_after_s
    if fault.target == NATS_NODE:
        return strike.time
    restarted = [
        r["time"]
        for r in rows(run_dir / "restarts.jsonl")
        if r["service"] == fault.target and r["event"] == "restart" and r["time"] > strike.time
    ]
    return min(restarted, default=None)


def recovered(strike: Strike, run_dir: Path) -> bool:
    """The run got over the fault: a rollout replica target trained a group again after it was
    back; any other target: two steps trained after (a group gathered before the fault can be
    trained just after the restart; the next step needs the restarted service)."""
    back = back_at(strike, run_dir)
    if back is None or time.time() < back:
        return False
    trained = [e for e in rows(run_dir / "groups.jsonl") if e["event"] == "trained" and e["time"] > back]
    if strike.fault.target.startswith("rollout-"):
        return any(e.get("replica") == strike.fault.target for e in trained)
    return len({e["step"] for e in trained}) >= 2


def run_scenario(fault: Fault, model_dir, data, tmp_path: Path, *overrides: str, **options) -> ScenarioResult:
    """Run `meshrl train` with one fault (run_faults' options: steps, cluster, during)."""
    return run_faults([fault], model_dir, data, tmp_path, *overrides, **options)[0]


def run_faults(
    faults: list[Fault],
    model_dir,
    data,
    tmp_path: Path,
    *overrides: str,
    steps: int = STEPS,
    span: int | None = None,
    cluster: NatsCluster | None = None,
    during: Callable[[subprocess.Popen, Path, float], None] | None = None,
) -> list[ScenarioResult]:
    """Run `meshrl train` for `steps` steps and strike `faults` one after another: each at a
    seeded step of the `span` steps after the previous one's recovery (recovered(): faults never
    overlap). On `cluster` (every stream and bucket
    replicated on each node) instead of the embedded nats-server when given. `during(proc,
    run_dir, fault_time)`, when given, runs after the last fault while the run goes on (a
    benchmark's further measures). One result per fault, each judging its own time window."""
    run_dir = tmp_path / "run"
    on_cluster = () if cluster is None else (f"nats.url={cluster.url}", f"nats.replicas={len(cluster.specs)}")
    cfg = mesh_config(
        model_dir,
        data,
        run_dir,
        f"learner.steps={steps}",
        "learner.prompts_per_step=2",
        "launch.backoff_initial_s=1",
        *on_cluster,
        *overrides,
    )
    (tmp_path / "config.yaml").write_text(dump_config(cfg))
    # Output to files, not pipes: a pipe nobody reads while `during` runs would block the launcher.
    with open(tmp_path / "train.out", "w") as out, open(tmp_path / "train.err", "w") as err:
        proc = subprocess.Popen([*MESHRL_TRAIN, str(tmp_path / "config.yaml")], stdout=out, stderr=err)
    try:
        if faults[0].target == NATS_NODE:  # early, while the engines start: leader moves take seconds
            aim_at_learners_node(proc, cluster)
        strikes, watch = strike_in_turn(faults, proc, run_dir, steps, span, cluster)
        if during is not None:
            during(proc, run_dir, strikes[-1].time)
        proc.wait(timeout=RUN_TIMEOUT_S)
        redelivered = watch.stop()
    finally:
        proc.kill()
    return judged(strikes, redelivered, proc.returncode, tmp_path, cfg.learner.push_every)


def strike_in_turn(
    faults: list[Fault], proc, run_dir: Path, steps: int, span: int | None, cluster
) -> tuple[list[Strike], RedeliveryWatch]:
    """Each fault at its moment, the next only once the run recovered from the one before."""
    strikes, watch = [], None
    for fault in faults:
        step, delay = moment(fault, steps, wait_turn(strikes, proc, run_dir), span)
        assert step <= steps - MIN_STEPS_AFTER, f"{fault.name}: step {step} of {steps} is too late: raise steps"
        wait_for(lambda at=step: len(rows(run_dir / "metrics.jsonl")) >= at, proc, f"step {step} to begin")
        watch = watch or start_watch(proc, run_dir, cluster)
        strikes.append(strike_at(fault, delay, proc, run_dir, cluster, watch))
    return strikes, watch


def wait_turn(strikes: list[Strike], proc: subprocess.Popen, run_dir: Path) -> int:
    """Until the run recovered from the last fault (none before the first); returns the steps
    begun by then, after which the next fault's step is drawn."""
    if not strikes:
        return 0
    last = strikes[-1]
    wait_for(lambda: recovered(last, run_dir), proc, f"the run to recover from {last.fault.name}")
    return len(rows(run_dir / "metrics.jsonl"))


def start_watch(proc: subprocess.Popen, run_dir: Path, cluster: NatsCluster | None) -> RedeliveryWatch:
    learner = launched(proc, "learner-0")
    return RedeliveryWatch(flag(learner, "--nats"), flag(learner, "--run-id"), run_dir, embedded=cluster is None)


def strike_at(fault: Fault, delay: float, proc, run_dir: Path, cluster, watch: RedeliveryWatch) -> Strike:
    """`delay` into the step (and once fault.when holds), the fault; with the counts so far."""
    time.sleep(delay)
    if fault.when is not None:
        wait_for(lambda: fault.when(run_dir), proc, f"{fault.name}: the moment to strike")
    counts = dict(watch.counts)
    if fault.target == NATS_NODE:
        at, victim = strike_node(proc, cluster)
    else:
        at, victim = strike(proc, fault), fault.target
    return Strike(fault, at, victim, counts)


def judged(strikes: list[Strike], redelivered: dict, returncode: int, tmp_path: Path, push_every: int):
    """The run's files read once, a result per fault: its window runs from its strike (the
    run's start for the first) to the next strike (the run's end for the last)."""
    run_dir = tmp_path / "run"
    metrics, ledger = rows(run_dir / "metrics.jsonl"), rows(run_dir / "groups.jsonl")
    stderr = (tmp_path / "train.err").read_text(errors="replace")
    proof = prove_ledger(ledger, versions_at_step(metrics, push_every))
    run = dict(returncode=returncode, stderr=stderr, run_dir=run_dir, metrics=metrics, ledger=ledger, proof=proof)
    restarts = rows(run_dir / "restarts.jsonl")
    starts = [(0.0, {})] + [(s.time, s.redelivered) for s in strikes[1:]]
    ends = [(s.time, s.redelivered) for s in strikes[1:]] + [(math.inf, redelivered)]
    return [
        ScenarioResult(
            s.fault,
            fault_time=s.time,
            victim=s.victim,
            restarts=[r for r in restarts if since <= r["time"] < until],
            redelivered=repeats(counts_before, counts_after),
            since=since,
            until=until,
            **run,
        )
        for s, (since, counts_before), (until, counts_after) in zip(strikes, starts, ends)
    ]


def repeats(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Repeat deliveries by stage between two of the watch's counts; at least 0, as a restarted
    nats-server restores its consumers' counts as last synced to disk."""
    return {stage: max(0, n - before.get(stage, 0)) for stage, n in after.items()}
