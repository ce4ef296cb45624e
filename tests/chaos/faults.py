"""The chaos suite's faults, one catalogue for the tests (tests/chaos/test_faults.py) and the
recovery benchmark (benchmarks/recovery.py): what is hit, how, at which seeded moment, and
the config the run needs for it (two rollout replicas to lose one of them, a short ack wait
for a frozen one, checkpoints for a killed learner, a NATS cluster for a lost node).
SHARED names the cases that fit one run together (run_shared): a mesh start-up is most of a
run's time.
"""

from __future__ import annotations

import re
import signal
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from meshrl.transport.bus.cluster import NatsCluster
from tests.chaos.scenario import NATS_NODE, Fault, ScenarioResult, run_faults, run_scenario

TWO_ROLLOUTS = "rollout.replicas=2"
ACK_WAIT_S = 8  # a frozen or dead replica's work goes elsewhere after this (<kind>.ack_wait_s)
FROZEN_S = 3 * ACK_WAIT_S  # SIGSTOP this long, then SIGCONT


# A run whose every task is an episode of the built-in tool_arith, on two launched replicas
# (the tiny_long_model_dir fixture: a prompt with the calculator rendered is ~900 tokens).
TWO_ENVIRONMENTS = (
    "environment.name=tool_arith",
    "environment.builtin=tool_arith",
    "environment.replicas=2",
    "reward.components=[{name: env, kind: environment, weight: 1.0}]",
    "rollout.max_model_len=2048",
    "data.max_prompt_tokens=1536",
    # A turn of 64 tokens, not the e2e default 8: the random tiny model never calls the tool,
    # so an episode is Reset, one turn, Step, Close. With 8-token turns the episode was open
    # mostly in those RPCs, and a kill that landed just after its last Step (before Close) cost
    # nothing: no group dropped, a flaky failure. Generating 64 tokens holds the episode open
    # waiting for its Step long enough that the kill meets a Step still to come.
    "rollout.sampling.max_tokens=64",
    # 4 episodes a group, not 8: a step trains sequences of ~960 tokens, the case's main cost.
    "rollout.sampling.group_size=4",
)


def open_episodes(run_dir: Path, replica: str) -> float:
    """meshrl_env_open_episodes of an environment replica, from the metrics URL in its log."""
    try:
        log = (run_dir / "logs" / f"{replica}.log").read_text(errors="replace")
        url = re.findall(r"METRICS (http://\S+)", log)[-1]
        text = urllib.request.urlopen(url, timeout=1).read().decode()
    except (OSError, IndexError):  # not started yet, or between a restart's lines
        return 0.0
    found = re.search(r"^meshrl_env_open_episodes(?:\{[^}]*\})? (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def holds_an_episode(run_dir: Path) -> bool:
    return open_episodes(run_dir, "environment-0") > 0


@dataclass(frozen=True)
class Case:
    fault: Fault
    overrides: tuple[str, ...] = ()
    cluster_nodes: int = 0  # > 0: the run uses a NatsCluster of this many nodes, not the embedded server


CASES = {
    # The dead replica's task comes back after the ack wait: 8 s, not the default 30 (a live
    # replica's heartbeats keep its tasks however long they take), 22 s of the case saved.
    "rollout": Case(
        Fault("kill -9 rollout-1 (of 2)", "rollout-1", seed=1), (TWO_ROLLOUTS, f"rollout.ack_wait_s={ACK_WAIT_S}")
    ),
    # Frozen just after its step's prompts go out, while it likely holds one: a step that
    # finishes before SIGCONT needed no frozen replica (its tasks came back after the ack wait).
    "sigstop": Case(
        Fault(
            f"SIGSTOP rollout-0 {FROZEN_S} s",
            "rollout-0",
            sig=signal.SIGSTOP,
            resume_after_s=FROZEN_S,
            seed=2,
            max_delay_s=0.5,
        ),
        (TWO_ROLLOUTS, f"rollout.ack_wait_s={ACK_WAIT_S}"),
    ),
    # A group the killed replica held comes back after its ack wait: 8 s, not the default 30.
    "reward": Case(Fault("kill -9 reward", "reward-0", seed=3), (f"reward.ack_wait_s={ACK_WAIT_S}",)),
    "reference": Case(Fault("kill -9 reference", "reference-0", seed=4), (f"reference.ack_wait_s={ACK_WAIT_S}",)),
    # A checkpoint every 2 steps: the resume trains again what came after the newest one.
    "learner": Case(Fault("kill -9 learner", "learner-0", seed=5), ("learner.checkpoint_every=2",)),
    "nats-server": Case(Fault("kill -9 nats-server", "nats-server", seed=6)),
    # As step 1 begins: 3 steps still to go however fast they run (a node lost after the last
    # step would prove nothing).
    "nats-node": Case(Fault("kill -9 NATS node (1 of 3)", NATS_NODE, seed=7, step=1, max_delay_s=0.0), cluster_nodes=3),
    # Mid-episode: struck once environment-0 holds an open episode (between its Reset and Close).
    "environment": Case(
        Fault("kill -9 environment-0 (of 2) mid-episode", "environment-0", seed=8, when=holds_an_episode),
        TWO_ENVIRONMENTS,
    ),
}


def run_case(case: Case, model_dir, data, tmp_path: Path, *overrides: str, **options) -> ScenarioResult:
    """run_scenario for `case` (its overrides, then `overrides`), inside its NATS cluster if any."""
    if not case.cluster_nodes:
        return run_scenario(case.fault, model_dir, data, tmp_path, *case.overrides, *overrides, **options)
    # Started here from the same nats-server binary; the launcher only gets its URLs.
    with NatsCluster(tmp_path / "nats", size=case.cluster_nodes) as cluster:
        return run_scenario(
            case.fault, model_dir, data, tmp_path, *case.overrides, *overrides, cluster=cluster, **options
        )


# The cases that share one run: each on the embedded NATS and the tiny model, their configs
# compatible (a checkpoint every 2 steps), each a fault the run waits out (while the service is
# down no step trains), so the steps a fault takes do not grow with the machine's speed. The
# two rollout cases keep runs of their own: while a replica is frozen (24 s) or restarting (a
# minute), the other trains on, and on a quiet host at ~5 steps/s that outran any fixed step
# count (a clean-clone CI run finished 80 steps before rollout-1 had trained a group, the
# SIGSTOP's precondition, and struck nothing).
SHARED = ("reward", "reference", "learner", "nats-server")
# Each fault a seeded 1..SHARED_SPAN steps after the run recovered from the one before (two
# steps trained after the restart): at most ~6 steps a fault, MIN_STEPS_AFTER after the last.
# A fault drawn too late fails the run with "raise steps".
SHARED_SPAN = 2
SHARED_STEPS = 40


def run_shared(model_dir, data, tmp_path: Path, names: tuple[str, ...] = SHARED) -> dict[str, ScenarioResult]:
    """The cases `names` struck one after another in one run with the union of their overrides;
    their results by name."""
    cases = [CASES[name] for name in names]
    assert not any(case.cluster_nodes for case in cases), "a case on a NATS cluster needs a run of its own"
    overrides = dict.fromkeys(o for case in cases for o in case.overrides)  # in order, once each
    faults = [case.fault for case in cases]
    results = run_faults(faults, model_dir, data, tmp_path, *overrides, steps=SHARED_STEPS, span=SHARED_SPAN)
    return dict(zip(names, results))
