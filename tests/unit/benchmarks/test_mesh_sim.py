"""benchmarks/mesh_sim.py: its ledger check on hand-made ledgers, the hop arithmetic on a
hand-made group, and a short real run (a real nats-server, 2 rollout + 1 reward replica
processes, replicas SIGKILLed while they hold work) whose ledger must balance."""

import pytest

from benchmarks.mesh_sim import parse_args, simulate
from benchmarks.mesh_sim_report import check_ledger, group_hops, saturated, sustained_per_min
from meshrl.api.common.v1 import common_pb2 as pb


def _events(published, trained):
    return [{"event": "published", "group_id": g} for g in published] + [
        {"event": "trained", "group_id": g} for g in trained
    ]


def test_ledger_balances_when_every_group_is_gathered_or_dead():
    result = check_ledger(_events(["a", "b", "c"], ["a", "b"]), dead_ids={"c"})
    assert (result["published"], result["trained"], result["dead_lettered"]) == (3, 2, 1)
    assert result["ok"] and result["lost"] == 0 and result["twice"] == 0


def test_ledger_names_a_lost_group_and_one_gathered_twice():
    result = check_ledger(_events(["a", "b", "c"], ["a", "a", "b"]), dead_ids=set())
    assert not result["ok"]
    assert (result["lost"], result["lost_ids"]) == (1, ["c"])
    assert (result["twice"], result["twice_ids"]) == (1, ["a"])


def test_hops_come_from_the_groups_own_timestamps():
    group = pb.Group(
        task=pb.PromptTask(created_unix=100.0),
        timings=[
            pb.StageTiming(stage="generate", start_unix=100.5, end_unix=101.0),
            pb.StageTiming(stage="reward", start_unix=101.1, end_unix=101.25),
            pb.StageTiming(stage="generate", start_unix=200.0, end_unix=201.0),
        ],
    )  # a later copy does not count
    assert group_hops(group, received_unix=101.5) == {
        "prompts->generated": 1.0,
        "generated->ready": 0.25,
        "ready->gathered": 0.25,
        "end-to-end": 1.5,
    }


def test_bad_flags_are_refused_naming_them():
    with pytest.raises(SystemExit):
        parse_args(["--rollouts", "0"])
    with pytest.raises(SystemExit):
        parse_args(["--minutes", "1", "--warmup-s", "60"])  # no time left to measure


def test_the_sustained_rate_counts_only_the_window_after_the_warm_up():
    # gathered at 1..20 s; window 10..20 s holds 11 groups: 11 / 10 s = 66 per minute
    assert sustained_per_min([float(t) for t in range(1, 21)], start=10.0, end=20.0) == pytest.approx(66.0)
    assert sustained_per_min([1.0, 2.0], start=5.0, end=5.0) == 0.0


def test_a_capacity_needs_a_feed_held_back_on_most_ticks():
    assert saturated(held_back_ticks=80, ticks=100)
    assert not saturated(held_back_ticks=10, ticks=100)  # the mesh kept up: the rate is the feed's
    assert not saturated(held_back_ticks=0, ticks=0)
    args = parse_args(["--minutes", "10"])
    assert args.rate == float("inf") and args.warmup_s == 30.0  # max, 10 % of the feed capped at 30 s


@pytest.mark.slow
async def test_a_short_simulation_with_kills_loses_nothing(tmp_path):
    # 300 ms generations and a kill every 3 s: the killed replicas hold groups, which
    # come back after the 2 s ack_wait and are served by the others. Fed as fast as 20
    # groups in flight allow: the mesh sets the rate, so what it reports is its capacity.
    args = parse_args(
        [
            "--minutes",
            str(10 / 60),
            "--rollouts",
            "2",
            "--rewards",
            "1",
            "--rate",
            "max",
            "--max-in-flight",
            "20",
            "--kill-every",
            "3",
            "--gen-ms",
            "300",
            "--ack-wait",
            "2",
            "--drain-s",
            "30",
            "--out",
            str(tmp_path),
        ]
    )
    report = await simulate(args)
    assert report["ledger"]["ok"], report["ledger"]
    ledger = report["ledger"]
    assert report["published"] >= 50 and ledger["trained"] + ledger["dead_lettered"] == report["published"]
    assert len(report["killed"]) >= 2 and not report["crashed"]
    assert report["saturated"] and report["held_back_share"] > 0.5 and report["sustained_per_min"] > 0
    assert set(report["cpu_s"]) >= {"rollout", "reward", "nats-server"}
