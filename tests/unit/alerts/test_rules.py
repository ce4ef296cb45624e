"""Each alert rule on hand-made metric sequences (numbers worked out in the comments)."""

import pytest

from tests.unit.alerts.helpers import FakeClock, engine, feed, fired_at

NAN = float("nan")


def test_kl_high_needs_k_consecutive_steps_above_the_bound():
    eng = engine("kl_high", kl_high={"max_kl": 0.5, "consecutive_steps": 3})
    # above at steps 2,3 (run 2) then 0.4 resets; 5,6,7 -> third in a row at step 7
    per_step = feed(eng, "kl", [0.1, 0.6, 0.7, 0.4, 0.6, 0.8, 0.9, 1.2])
    assert fired_at(per_step) == [7]
    alert = per_step[6][0]
    assert alert.rule == "kl_high" and alert.severity == "warning" and alert.action == "none"
    assert alert.message == "kl 0.9 > 0.5 for 3 consecutive steps (steps 5-7)"
    assert alert.values == {"kl": 0.9, "max_kl": 0.5, "steps": 3}
    assert alert.step == 7 and alert.run_id == "run-t"


def test_kl_missing_or_null_neither_counts_nor_resets():
    eng = engine("kl_high", kl_high={"max_kl": 0.5, "consecutive_steps": 2})
    assert fired_at(feed(eng, "kl", [0.6, None, 0.7])) == [3]


def test_entropy_collapse_against_the_first_steps_mean():
    eng = engine("entropy_collapse", entropy_collapse={"baseline_steps": 3, "min_fraction": 0.25})
    # baseline mean(1.0, 1.2, 0.8) = 1.0 -> bound 0.25; 0.3 ok, 0.2 fires
    per_step = feed(eng, "entropy", [1.0, 1.2, 0.8, 0.3, 0.2, 0.1])
    assert fired_at(per_step) == [5]
    assert per_step[4][0].message == ("entropy 0.2 < 0.25 × first-3-steps mean 1 (= 0.25) at step 5")


def test_reward_nan_on_null_nan_and_inf():
    eng = engine("reward_nan")
    per_step = feed(eng, "reward", [0.5, None, NAN, 0.4, float("inf")])
    assert fired_at(per_step) == [2, 5]  # 2-3 one episode; 0.4 re-arms; inf fires again
    assert per_step[1][0].severity == "critical"
    assert per_step[1][0].message == "reward is None (not finite) at step 2"


def test_reward_flat_uses_population_std_of_the_window():
    eng = engine("reward_flat", reward_flat={"window": 4, "min_std": 0.01})
    # windows: [.5,.5,.52,.5] std = 0.00866 < 0.01 -> fires at step 4
    per_step = feed(eng, "reward", [0.5, 0.5, 0.52, 0.5, 0.6, 0.7])
    assert fired_at(per_step) == [4]
    assert "std 0.00866 < 0.01 over the last 4 steps (mean 0.505, steps 1-4)" in per_step[3][0].message
    # [.5,.52,.5,.6] std 0.041 clears; the window is flat again only at step 9 ([.7]*4)
    assert fired_at(feed(eng, "reward", [0.7, 0.7, 0.7], start=7), start=7) == [9]


def test_nonfinite_loss_and_grad_norm_pause_by_default():
    eng = engine("nonfinite")
    alerts = eng.observe(1, {"loss": NAN, "grad_norm": None, "kl": None})
    assert sorted(a.key for a in alerts) == ["nonfinite:grad_norm", "nonfinite:loss"]
    assert {a.action for a in alerts} == {"pause"}
    assert eng.observe(2, {"loss": NAN, "grad_norm": 1.0}) == []
    assert [a.key for a in eng.observe(3, {"loss": 0.1, "grad_norm": NAN})] == ["nonfinite:grad_norm"]


def test_spike_over_factor_times_running_median():
    eng = engine("spike", spike={"metrics": ["grad_norm"], "factor": 10, "min_history": 3, "window": 5, "floor": 0.0})
    # history [1, 2, 3] median 2 -> bound 20: 19 ok; then [1,2,3,19] median 2.5 -> bound 25
    per_step = feed(eng, "grad_norm", [1, 2, 3, 19, 26, 1])
    assert fired_at(per_step) == [5]
    a = per_step[4][0]
    assert a.key == "spike:grad_norm" and a.values == {"grad_norm": 26, "median": 2.5, "bound": 25.0}


def test_spike_floor_ignores_wiggles_of_a_loss_near_zero():
    eng = engine("spike", spike={"metrics": ["loss"], "factor": 10, "min_history": 3, "floor": 0.1})
    # |loss| median 0.002; without the floor 0.05 would be a spike; with it the bound is 1.0
    assert fired_at(feed(eng, "loss", [0.001, -0.002, 0.003, -0.05, 0.9, -1.5])) == [6]


def test_stall_watches_steps_from_start_and_groups_once_seen():
    clock = FakeClock()
    eng = engine("rollout_stalled", clock=clock, rollout_stalled={"after_s": 60, "startup_grace_s": 300})
    clock.t = 299
    assert eng.poll() == []
    clock.t = 301
    [first] = eng.poll()
    assert first.key == "rollout_stalled:step"
    assert first.message == "no new learner step for 301 s since start (no first one yet); limit 300 s"
    assert eng.poll() == []  # still stalled: same episode
    eng.observe(1, {})  # a step re-arms
    eng.progress("groups")
    clock.t = 350
    assert eng.poll() == []
    clock.t = 362
    alerts = eng.poll()
    assert sorted(a.key for a in alerts) == ["rollout_stalled:groups", "rollout_stalled:step"]
    assert "no new group for 61 s; limit 60 s" in [a.message for a in alerts]
    eng.progress("groups")
    clock.t = 363
    assert eng.poll() == []
    clock.t = 424  # groups idle 61 s again -> fires again; step still in its first episode
    assert [a.key for a in eng.poll()] == ["rollout_stalled:groups"]


def test_memory_growth_needs_every_step_rising_and_total_growth():
    eng = engine("memory_growth", memory_growth={"steps": 4, "min_growth_pct": 10})
    mib = 2**20
    # 100,104,108,112 MiB: rising, +12% > 10% -> fires at step 4
    per_step = feed(eng, "memory/rss_bytes", [100 * mib, 104 * mib, 108 * mib, 112 * mib])
    assert fired_at(per_step) == [4]
    assert per_step[3][0].message == ("RSS rose every step for 4 steps: 100 MiB -> 112 MiB (+12.0% > 10%) up to step 4")
    # a dip clears it; 104,108,112,111 is not monotonic
    assert fired_at(feed(eng, "memory/rss_bytes", [111 * mib], start=5), start=5) == []
    assert eng.active == set()


def test_memory_growth_small_rise_does_not_fire():
    eng = engine("memory_growth", memory_growth={"steps": 3, "min_growth_pct": 10})
    assert fired_at(feed(eng, "memory/rss_bytes", [100.0, 105.0, 109.0, 110.0])) == []


def test_memory_growth_samples_own_rss_when_step_lacks_it():
    eng = engine("memory_growth", memory_growth={"steps": 2})
    eng.observe(1, {})
    [rule] = eng.rules
    assert rule.samples[0] > 10e6  # a Python process is more than 10 MB


def test_service_down_after_consecutive_failed_checks_per_service():
    health = {"reward-0": True, "rollout-0": True}
    eng = engine("service_down", service_down={"consecutive_failures": 2})
    eng.health_check = lambda: dict(health)
    assert eng.poll() == []
    health["reward-0"] = False
    assert eng.poll() == []
    [alert] = eng.poll()
    assert alert.key == "service_down:reward-0" and alert.severity == "critical"
    assert alert.message == "service reward-0 down: 2 failed health checks in a row (limit 2)"
    assert eng.poll() == []
    assert [a.key for a in eng.poll(health={"rollout-0": False})] == []
    assert [a.key for a in eng.poll(health={"rollout-0": False})] == ["service_down:rollout-0"]


def test_a_failing_health_callback_is_logged_not_an_alert(caplog):
    eng = engine("service_down")
    eng.health_check = lambda: 1 / 0
    assert eng.poll() == []
    assert "health check callback failed" in caplog.text


@pytest.mark.parametrize("name", ["kl_high", "spike", "memory_growth"])
def test_disabled_rules_are_not_built(name):
    assert engine(name, **{name: {"enabled": False}}).rules == []


def test_reward_outage_fires_after_after_s_of_failures_only_and_clears_on_a_scored_group():
    clock = FakeClock()
    eng = engine("reward_outage", clock=clock, reward_outage={"after_s": 30})
    eng.progress("score_failed")  # t = 0: the first failure starts the clock
    clock.t = 29.0
    eng.progress("score_failed")
    assert eng.poll() == []
    clock.t = 30.0
    [alert] = eng.poll()
    assert alert.rule == "reward_outage" and alert.values == {"down_s": 30.0, "failures": 2}
    assert alert.message.startswith("every group failed scoring for 30 s (2 groups)")
    assert eng.poll() == []  # one alert per outage
    eng.progress("scored")
    clock.t = 100.0
    eng.progress("score_failed")  # a new outage starts at 100
    assert eng.poll() == []
    clock.t = 131.0
    assert [a.rule for a in eng.poll()] == ["reward_outage"]


def test_env_drop_rate_over_the_window_of_arrived_groups():
    eng = engine("env_drop_rate", env_drop_rate={"max_fraction": 0.25, "window": 2, "min_groups": 4})
    totals = [(0, 2), (1, 4), (3, 5), (6, 6), (6, 10), (6, 14)]  # (rollout-dropped, trained) totals
    per_step = [
        eng.observe(step, {"groups/rollout_dropped_total": d, "groups/trained_total": t})
        for step, (d, t) in enumerate(totals, start=1)
    ]
    # window of 2 steps: step 2: 1 of 4 (25%, not above); step 3: 3 of 6 since step 1 → 50% fires;
    # step 4: 5 of 7 (still active, no new alert); step 5: 3 of 8 = 37.5% (active);
    # step 6: 0 of 8 clears
    assert fired_at(per_step) == [3]
    alert = per_step[2][0]
    assert alert.message.startswith("3 of 6 groups (50%) in the last 2 steps were dropped by the rollout (> 25%)")
    assert alert.values == {"dropped": 3.0, "groups": 6.0, "max_fraction": 0.25}
    assert eng.observe(7, {"groups/rollout_dropped_total": 12, "groups/trained_total": 15}) != []  # 6 of 7 again


def test_env_drop_rate_waits_for_min_groups_and_for_its_metrics():
    eng = engine("env_drop_rate", env_drop_rate={"window": 5, "min_groups": 4})
    assert eng.observe(1, {"groups/rollout_dropped_total": 2, "groups/trained_total": 1}) == []  # 3 < 4
    assert eng.observe(2, {"reward": 0.5}) == []  # a row without the totals: nothing judged
    assert eng.observe(3, {"groups/rollout_dropped_total": 3, "groups/trained_total": 1})[0].rule == "env_drop_rate"


def test_the_stall_rule_times_groups_only_not_other_rules_progress_kinds():
    clock = FakeClock()
    eng = engine("rollout_stalled", clock=clock, rollout_stalled={"after_s": 60, "startup_grace_s": 300})
    eng.observe(1, {})
    for kind in ("score_failed", "scored", "env_failed", "env_answered", "kept", "dropped:prompt_too_long"):
        eng.progress(kind)  # none of these is a kind of progress the rule times
    clock.t = 61
    assert [a.key for a in eng.poll()] == ["rollout_stalled:step"]  # not "no new score_failed for 61 s"


def test_env_outage_fires_after_after_s_of_environment_failures_and_clears_on_a_finished_group():
    clock = FakeClock()
    eng = engine("env_outage", clock=clock, env_outage={"after_s": 20})
    eng.progress("env_failed")  # t = 0
    eng.progress("score_failed")  # the reward outage's kind: not this rule's
    clock.t = 19.0
    assert eng.poll() == []
    clock.t = 20.0
    [alert] = eng.poll()
    assert (
        alert.rule == "env_outage" and alert.severity == "critical" and alert.values == {"down_s": 20.0, "failures": 1}
    )
    assert alert.message.startswith(
        "every group was dropped: its environment could not be reached or did not "
        "answer in time for 20 s (1 groups); check the environment service"
    )
    eng.progress("env_answered")
    clock.t = 100.0
    assert eng.poll() == []


def test_dropped_in_a_row_counts_drops_that_do_not_pass_and_a_kept_group_resets_it():
    eng = engine("dropped_in_a_row", dropped_in_a_row={"max_groups": 3})
    for reason in (
        "prompt_too_long",
        "env_internal",
        "stale",
        "no_signal",
        "orphaned",
        "failed_reward",
        "env_unavailable",
        "env_deadline_exceeded",
    ):
        eng.progress(f"dropped:{reason}")  # only the first two count: 2 < 3
    assert eng.poll() == []
    eng.progress("kept")
    eng.progress("dropped:env_internal")
    eng.progress("dropped:env_internal")
    assert eng.poll() == []  # the kept group reset the streak: 2
    eng.progress("dropped:prompt_too_long")
    [alert] = eng.poll()
    assert alert.rule == "dropped_in_a_row" and alert.values == {"dropped": 3, "max_groups": 3}
    assert alert.message.startswith(
        "3 groups in a row were dropped and none trained "
        "(env_internal ×2, prompt_too_long ×1); env_internal: the environment failed"
    )
    assert (
        "prompt_too_long: the first prompt (the task's messages, the tools block, the first observation) leaves "
        "no room for a turn: raise rollout.max_model_len" in alert.message
    )
    assert alert.message.endswith("(the limit: alerts.dropped_in_a_row.max_groups=3; each drop is in groups.jsonl)")


def test_a_drop_streak_names_at_most_three_reasons_with_their_first_detail():
    from meshrl.alerts.rules.drop_streak import DropStreak

    streak = DropStreak()
    for reason, detail in [
        ("env_invalid_answer", "episode g/0: environment INVALID_ANSWER: reward=nan"),
        ("env_invalid_answer", "a later one"),
        ("malformed", "sample 0: empty response"),
        ("env_unauthenticated", ""),
        ("weird_code", ""),
    ]:
        streak.dropped(reason, detail)
    message = streak.describe(64)
    assert message.startswith(
        "5 groups in a row were dropped and none trained (env_invalid_answer ×2, malformed ×1, "
        "env_unauthenticated ×1, weird_code ×1); env_invalid_answer (e.g. episode g/0: "
        "environment INVALID_ANSWER: reward=nan): the environment answered outside the contract"
    )
    assert "a later one" not in message and "weird_code:" not in message  # the top 3 only
    assert (
        "env_unauthenticated: the environment refused the bearer token: environment.token_env / token_file" in message
    )
