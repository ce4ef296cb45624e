"""Prometheus alert rules that mirror meshrl's built-in alerts (meshrl/config/alerts.py).

    python deploy/observability/generate.py          # writes prometheus/meshrl-alerts.yml
    promtool check rules deploy/observability/prometheus/meshrl-alerts.yml

Thresholds come from the defaults of `AlertsConfig` (or the config given to `rule_groups`), so
the file and the learner's own alerts say the same thing. Every alert carries the labels
`severity` and `meshrl_rule` (the built-in rule's name) and the annotation `action` (what the
learner itself does: none | pause | stop).

What a time series can and cannot say, i.e. the simplifications: the built-in rules count
learner steps, Prometheus sees one value per scrape (SCRAPE_S), so "N steps" becomes "N scrape
intervals"; entropy collapse compares with the highest entropy of the last day instead of the
mean of the first steps; a NaN is seen through meshrl_train_nonfinite_values_total (the gauge
keeps its last finite value); a reward outage is one component failing every result it gave
for `after_s` (the built-in rule watches whole groups); the environment outage and groups
dropped in a row are seen from the rollout's episodes over a time window (the built-in rules
count whole groups, the latter also those the learner drops itself: malformed, empty).
"""

from __future__ import annotations

from meshrl.config.alerts import AlertsConfig
from meshrl.telemetry.metrics import train_series

SCRAPE_S = 15  # deploy/compose/prometheus.yml's scrape_interval
GROUP = "meshrl-built-in-alerts"


def train(key: str) -> str:
    """The learner series of a metrics.jsonl key as a selector (`memory/rss_bytes` ->
    meshrl_train_memory_rss_bytes, `reward/format` -> meshrl_train_reward_component{component="format"})."""
    name, labels, _ = train_series(key)
    selector = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return f"{name}{{{selector}}}" if selector else name


def seconds(n: float) -> str:
    return f"{max(int(n), 4 * SCRAPE_S)}s"  # increase() needs two samples, even after a missed scrape


def alert(name: str, rule: str, cfg, expr: str, summary: str, for_s: float = 0) -> dict:
    out = {"alert": name, "expr": expr}
    if for_s:
        out["for"] = f"{int(for_s)}s"
    out["labels"] = {"severity": cfg.severity, "meshrl_rule": rule}
    out["annotations"] = {
        "summary": summary,
        "action": cfg.action,
        "description": "run {{ $labels.run }} (alert rule mirrors meshrl built-in rule " + rule + ")",
    }
    return out


def learner_alerts(c: AlertsConfig) -> list[dict]:
    kl, ent, flat, mem = c.kl_high, c.entropy_collapse, c.reward_flat, c.memory_growth
    nonfinite_keys = "|".join(c.nonfinite.metrics)
    rss, reward = train(mem.metric), train(flat.metric)
    return [
        alert(
            "MeshrlKLHigh",
            "kl_high",
            kl,
            f"{train(kl.metric)} > {kl.max_kl}",
            f"{kl.metric} above {kl.max_kl}",
            for_s=kl.consecutive_steps * SCRAPE_S,
        ),
        alert(
            "MeshrlEntropyCollapse",
            "entropy_collapse",
            ent,
            f"{train(ent.metric)} < {ent.min_fraction} * max_over_time({train(ent.metric)}[1d])",
            f"{ent.metric} fell below {ent.min_fraction} of its high",
        ),
        alert(
            "MeshrlRewardNaN",
            "reward_nan",
            c.reward_nan,
            f'increase(meshrl_train_nonfinite_values_total{{metric="{c.reward_nan.metric}"}}[5m]) > 0',
            f"{c.reward_nan.metric} was NaN or infinite",
        ),
        alert(
            "MeshrlNonFinite",
            "nonfinite",
            c.nonfinite,
            f'increase(meshrl_train_nonfinite_values_total{{metric=~"{nonfinite_keys}"}}[5m]) > 0',
            "{{ $labels.metric }} was NaN or infinite",
        ),
        alert(
            "MeshrlRewardFlat",
            "reward_flat",
            flat,
            f"stddev_over_time({reward}[{seconds(flat.window * SCRAPE_S)}]) < {flat.min_std} "
            f"and count_over_time({reward}[{seconds(flat.window * SCRAPE_S)}]) >= {flat.window}",
            f"{flat.metric} flat over {flat.window} scrapes: nothing is learned",
        ),
        alert(
            "MeshrlMemoryGrowth",
            "memory_growth",
            mem,
            f"{rss} > {1 + mem.min_growth_pct / 100:g} * min_over_time({rss}[{seconds(mem.steps * SCRAPE_S)}]) "
            f"and {rss} >= max_over_time({rss}[{seconds(mem.steps * SCRAPE_S)}])",
            f"learner RSS up by more than {mem.min_growth_pct:g}% and still rising",
        ),
    ]


def spike_alerts(c: AlertsConfig) -> list[dict]:
    s, out = c.spike, []
    window = seconds(s.window * SCRAPE_S)
    for key in s.metrics:
        m = train(key)
        expr = (
            f"abs({m}) > {s.factor} * clamp_min(quantile_over_time(0.5, abs({m})[{window}:{SCRAPE_S}s]), {s.floor}) "
            f"and count_over_time({m}[{window}]) >= {s.min_history}"
        )
        name = "MeshrlSpike" + "".join(part.title() for part in key.replace("/", "_").split("_"))
        out.append(alert(name, "spike", s, expr, f"{key} jumped above {s.factor}x its recent median"))
    return out


def mesh_alerts(c: AlertsConfig) -> list[dict]:
    stall, down, outage = c.rollout_stalled, c.service_down, c.reward_outage
    results = "meshrl_reward_component_scores_total"
    window = seconds(outage.after_s)
    return [
        alert(
            "MeshrlRolloutStalled",
            "rollout_stalled",
            stall,
            f"time() - max by (run) (meshrl_train_timestamp_seconds) > {stall.after_s:g} "
            f"or sum by (run) (increase(meshrl_groups_generated_total[{seconds(stall.after_s)}])) == 0",
            f"no learner step or no new group for {stall.after_s:g} s",
        ),
        alert(
            "MeshrlServiceDown",
            "service_down",
            down,
            'up{job="meshrl"} == 0',
            "{{ $labels.service }} {{ $labels.instance }} does not answer its scrape",
            for_s=down.consecutive_failures * down.probe_interval_s,
        ),
        alert(
            "MeshrlRewardOutage",
            "reward_outage",
            outage,
            f'sum by (run, component) (increase({results}{{status!="ok"}}[{window}])) > 0 '
            f'unless sum by (run, component) (increase({results}{{status="ok"}}[{window}])) > 0',
            "reward component {{ $labels.component }} failed every result",
            for_s=outage.after_s,
        ),
        # the circuit breaker opens after a run of failed calls, before a whole window has failed
        alert(
            "MeshrlRewardBreakerOpen",
            "reward_outage",
            outage,
            "max by (run, component, target) (meshrl_reward_external_breaker_state) == 2",
            "calls to reward service {{ $labels.target }} ({{ $labels.component }}) are refused: its circuit breaker is open",
            for_s=2 * SCRAPE_S,
        ),
    ]


OUTAGE_REASONS = "env_unavailable|env_deadline_exceeded"  # meshrl/alerts/rules/env_outage.py
STREAK_WINDOW_S = 20 * SCRAPE_S


def env_alerts(c: AlertsConfig) -> list[dict]:
    """Agents: the share of arriving groups the rollout dropped (their environment failed); an
    environment outage and a rollout that drops every group, from the rollout's episodes
    (the learner logs nothing until a step ends)."""
    e, outage, streak = c.env_drop_rate, c.env_outage, c.dropped_in_a_row
    window = seconds(e.window * SCRAPE_S)
    dropped = f"increase({train('groups/rollout_dropped_total')}[{window}])"
    arrived = f"({dropped} + increase({train('groups/trained_total')}[{window}]))"
    return [
        alert(
            "MeshrlEnvDropRate",
            "env_drop_rate",
            e,
            f"{dropped} / clamp_min({arrived}, 1) > {e.max_fraction} and {arrived} >= {e.min_groups}",
            f"more than {e.max_fraction:.0%} of the groups were dropped by the rollout: "
            f"their environment failed (groups_dropped by reason)",
        ),
        alert(
            "MeshrlEnvOutage",
            "env_outage",
            outage,
            only_dropped(f'reason=~"{OUTAGE_REASONS}"', outage.after_s),
            "every episode's environment was unreachable or past its deadline",
            for_s=outage.after_s,
        ),
        alert(
            "MeshrlGroupsDroppedInARow",
            "dropped_in_a_row",
            streak,
            only_dropped(f'reason!~"{OUTAGE_REASONS}"', STREAK_WINDOW_S),
            "the rollout dropped every episode and finished none (meshrl_agent_episodes_dropped_total by reason)",
            for_s=STREAK_WINDOW_S,
        ),
    ]


def only_dropped(selector: str, window_s: float) -> str:
    """Episodes dropped for `selector` reasons in the window, and none finished."""
    w = seconds(window_s)
    return (
        f"sum by (run) (increase(meshrl_agent_episodes_dropped_total{{{selector}}}[{w}])) > 0 "
        f"unless sum by (run) (increase(meshrl_agent_episodes_total[{w}])) > 0"
    )


def rule_groups(config: AlertsConfig | None = None) -> dict:
    """The rules file's content: one group with an alert per enabled built-in rule."""
    c = config or AlertsConfig()
    alerts = learner_alerts(c) + spike_alerts(c) + mesh_alerts(c) + env_alerts(c)
    enabled = [a for a in alerts if getattr(c, a["labels"]["meshrl_rule"]).enabled]
    return {"groups": [{"name": GROUP, "interval": f"{SCRAPE_S}s", "rules": enabled}]}
