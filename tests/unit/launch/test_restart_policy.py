"""The restart policy alone: exponential back-off with a cap, a streak that starts over after
a healthy run, and a budget of restarts per sliding window (hand-computed numbers)."""

import pytest

from meshrl.config.load import load_config
from meshrl.launch.restarts import RestartHistory, RestartPolicy

POLICY = RestartPolicy(budget=4, window_s=100.0, initial_s=1.0, max_delay_s=5.0, reset_after_s=30.0)


def test_delays_double_and_are_capped():
    assert [POLICY.delay_s(n) for n in range(1, 6)] == [1.0, 2.0, 4.0, 5.0, 5.0]


def test_quick_crashes_back_off_until_the_budget_is_spent():
    history = RestartHistory(POLICY)
    decisions = [history.on_exit(now=t, ran_for_s=0.5) for t in (0.0, 2.0, 5.0, 10.0)]
    assert [(d.restart, d.delay_s, d.attempt) for d in decisions] == [
        (True, 1.0, 1),
        (True, 2.0, 2),
        (True, 4.0, 3),
        (True, 5.0, 4),
    ]
    final = history.on_exit(now=16.0, ran_for_s=0.5)
    assert not final.restart
    assert "launch.restart_budget=4" in final.reason and "launch.restart_window_s=100 s" in final.reason


def test_a_healthy_run_starts_the_back_off_over():
    history = RestartHistory(POLICY)
    assert history.on_exit(now=0.0, ran_for_s=1.0).delay_s == 1.0
    assert history.on_exit(now=2.0, ran_for_s=1.0).delay_s == 2.0
    assert history.on_exit(now=40.0, ran_for_s=35.0).delay_s == 1.0  # ran 35 s >= 30 s: healthy
    assert history.on_exit(now=42.0, ran_for_s=1.0).delay_s == 2.0


def test_restarts_older_than_the_window_no_longer_count():
    history = RestartHistory(POLICY)
    for t in (0.0, 10.0, 20.0, 30.0):
        assert history.on_exit(now=t, ran_for_s=40.0).restart
    assert not history.on_exit(now=99.0, ran_for_s=40.0).restart  # 4 restarts within 100 s
    later = history.on_exit(now=100.5, ran_for_s=40.0)  # the one at t=0 left the window
    assert later.restart and later.attempt == 4 and history.total == 5


def test_budget_zero_means_never_restart():
    assert not RestartHistory(RestartPolicy(budget=0)).on_exit(now=0.0, ran_for_s=500.0).restart


def test_policy_comes_from_the_launch_section():
    cfg = load_config(
        base={
            "model": {"path": "/m"},
            "data": {"train": "/d"},
            "launch": {"restart_budget": 2, "backoff_initial_s": 0.5},
        }
    )
    policy = RestartPolicy.from_config(cfg.launch)
    assert (policy.budget, policy.initial_s, policy.max_delay_s) == (2, 0.5, 60.0)


def test_a_cap_below_the_first_wait_is_a_config_error():
    with pytest.raises(Exception, match="launch.backoff_max_s=0.5 is below launch.backoff_initial_s=2"):
        load_config(
            base={
                "model": {"path": "/m"},
                "data": {"train": "/d"},
                "launch": {"backoff_initial_s": 2, "backoff_max_s": 0.5},
            }
        )
