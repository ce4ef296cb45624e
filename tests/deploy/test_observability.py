"""deploy/observability: the Prometheus alert rules mirror the built-in alerts and pass
`promtool check rules` and `promtool test rules` (alerts fire on hand-made series at the
hand-computed time), the Grafana dashboard is well-formed, and every metric either file
names is one a real meshrl /metrics endpoint exports.

    .venv/bin/python -m pytest -q tests/deploy/test_observability.py
promtool comes from the Debian package prometheus (scripts/test_tools.sh installs it).
"""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import yaml

from meshrl.api.common.v1 import common_pb2
from meshrl.config.alerts import AlertsConfig, RuleConfig
from meshrl.services.learner.metric_logger import PrometheusLogger
from meshrl.services.reference.worker import reference_instruments
from meshrl.services.reward.call_metrics import CallMetrics
from meshrl.services.reward.instruments import reward_instruments
from meshrl.services.rollout.agent.instruments import AgentEvents
from meshrl.services.rollout.instruments import rollout_instruments
from meshrl.telemetry.latency import record_rpc, timed_stage
from meshrl.telemetry.metrics import start_metrics
from tests.fixtures.prometheus import promtool_check

OBS = Path(__file__).resolve().parents[2] / "deploy" / "observability"
RULES = OBS / "prometheus" / "meshrl-alerts.yml"
DASHBOARD = OBS / "grafana" / "meshrl.json"


def load_alert_rules() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("meshrl_alert_rules", OBS / "alert_rules.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Every key a GRPO step with a KL penalty writes to metrics.jsonl (a real run's row, plus kl).
STEP_KEYS = [
    "advantages/mean",
    "approx_kl",
    "clip_ratio/dual",
    "clip_ratio/high",
    "clip_ratio/low",
    "completions/clipped_ratio",
    "completions/max_length",
    "completions/mean_length",
    "completions/min_length",
    "entropy",
    "grad_norm",
    "groups/trained_total",
    "kl",
    "loss",
    "lr",
    "memory/rss_bytes",
    "mismatch_kl",
    "perf/throughput",
    "perf/tokens",
    "reward",
    "reward/max",
    "reward/min",
    "reward/math",
    "reward/math_failed",
    "staleness/mean",
    "time",
    "time/forward",
    "time/step",
    "time/train",
    "weights_version",
    "queue/generate",
    "groups/dropped_stale",
    "groups/rollout_dropped_total",
]


def promtool(*args: str) -> subprocess.CompletedProcess:
    tool = shutil.which("promtool")
    assert tool, "promtool missing: bash scripts/test_tools.sh installs it (Debian package prometheus)"
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=120)


def test_generated_files_are_up_to_date():
    result = subprocess.run([sys.executable, str(OBS / "generate.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_promtool_accepts_the_rules():
    result = promtool("check", "rules", str(RULES))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_built_in_rule_has_an_alert_with_its_severity():
    alerts = yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
    config = AlertsConfig()
    built_in = {name for name, field in AlertsConfig.model_fields.items() if isinstance(field.default, RuleConfig)}
    assert built_in == {a["labels"]["meshrl_rule"] for a in alerts}
    for a in alerts:
        rule = getattr(config, a["labels"]["meshrl_rule"])
        assert (a["labels"]["severity"], a["annotations"]["action"]) == (rule.severity, rule.action)
    kl = next(a for a in alerts if a["alert"] == "MeshrlKLHigh")
    assert kl["expr"] == "meshrl_train_kl > 0.5" and kl["for"] == "45s"  # max_kl 0.5, 3 steps × 15 s


def test_a_reward_component_in_a_rule_is_a_label_selector(tmp_path):
    config = AlertsConfig.model_validate({"spike": {"metrics": ["reward/format", "perf/throughput"]}})
    rules = load_alert_rules().rule_groups(config)
    spikes = {a["alert"]: a["expr"] for a in rules["groups"][0]["rules"] if a["labels"]["meshrl_rule"] == "spike"}
    assert 'abs(meshrl_train_reward_component{component="format"})' in spikes["MeshrlSpikeRewardFormat"]
    assert "meshrl_train_perf_throughput_tokens_per_second" in spikes["MeshrlSpikePerfThroughput"]
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules, sort_keys=False))
    result = promtool("check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr


def expected(name: str, rule: str, severity: str, action: str = "none", **labels) -> dict:
    return {
        "exp_labels": {"severity": severity, "meshrl_rule": rule, **labels},
        "exp_annotations": {
            **ANNOTATIONS[name],
            "action": action,
            "description": f"run {labels.get('run', '')} (alert rule mirrors meshrl built-in rule {rule})",
        },
    }


ANNOTATIONS = {
    a["alert"]: {k: v for k, v in a["annotations"].items() if k == "summary"}
    for a in yaml.safe_load(RULES.read_text())["groups"][0]["rules"]
}


def rule_tests() -> dict:
    """Series 15 s apart from t=0 (time() = 0 at the start); what fires when, by hand."""
    return {
        "rule_files": [str(RULES)],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [
                    # kl > 0.5 from t=15s; `for: 45s` -> pending at 45s, firing from 60s
                    {"series": 'meshrl_train_kl{run="r"}', "values": "0.1 0.6 0.6 0.6 0.6 0.6 0.6"},
                    # one NaN reward at t=30s: increase over 5m > 0
                    {
                        "series": 'meshrl_train_nonfinite_values_total{metric="reward",run="r"}',
                        "values": "0 0 1 1 1 1 1",
                    },
                    # down from 15s; `for: 20s` (2 failures × 10 s probe) -> firing at 45s
                    {"series": 'up{job="meshrl",service="reward",instance="reward:9464"}', "values": "1 0 0 0 0 0 0"},
                    # the last step's unix time is 0: stalled once time() > 600
                    {"series": 'meshrl_train_timestamp_seconds{run="r"}', "values": "0x60"},
                ],
                "alert_rule_test": [
                    {"eval_time": "45s", "alertname": "MeshrlKLHigh", "exp_alerts": []},
                    {
                        "eval_time": "75s",
                        "alertname": "MeshrlKLHigh",
                        "exp_alerts": [expected("MeshrlKLHigh", "kl_high", "warning", run="r")],
                    },
                    {
                        "eval_time": "1m",
                        "alertname": "MeshrlRewardNaN",
                        "exp_alerts": [expected("MeshrlRewardNaN", "reward_nan", "critical", metric="reward", run="r")],
                    },
                    {"eval_time": "30s", "alertname": "MeshrlServiceDown", "exp_alerts": []},
                    {
                        "eval_time": "45s",
                        "alertname": "MeshrlServiceDown",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "critical",
                                    "meshrl_rule": "service_down",
                                    "job": "meshrl",
                                    "service": "reward",
                                    "instance": "reward:9464",
                                },
                                "exp_annotations": {
                                    "summary": "reward reward:9464 does not answer its scrape",
                                    "action": "none",
                                    "description": "run  (alert rule mirrors meshrl built-in rule service_down)",
                                },
                            }
                        ],
                    },
                    {"eval_time": "9m", "alertname": "MeshrlRolloutStalled", "exp_alerts": []},
                    {
                        "eval_time": "11m",
                        "alertname": "MeshrlRolloutStalled",
                        "exp_alerts": [expected("MeshrlRolloutStalled", "rollout_stalled", "critical", run="r")],
                    },
                ],
            },
            {
                "interval": "15s",
                "input_series": [
                    # math scored ok until 30s, then only errors: from t=90s no ok in the 60 s window
                    # (t=75s where the window leaves out its start, Prometheus 3), errors in it;
                    # `for: 30s` -> pending at 75s, firing by 135s whichever the window
                    {
                        "series": 'meshrl_reward_component_scores_total{component="math",status="ok",run="r"}',
                        "values": "0 1 2 2 2 2 2 2 2 2 2 2",
                    },
                    {
                        "series": 'meshrl_reward_component_scores_total{component="math",status="error",run="r"}',
                        "values": "0 0 0 1 2 3 4 5 6 7 8 9",
                    },
                    # the judge's breaker opens at t=30s; `for: 30s` -> pending at 45s, firing from 60s
                    {
                        "series": 'meshrl_reward_external_breaker_state{component="judge",target="10.0.0.7:50061",run="r"}',
                        "values": "0 0 2 2 2 2 2 2 2 2 2 2",
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "75s", "alertname": "MeshrlRewardOutage", "exp_alerts": []},
                    {
                        "eval_time": "135s",
                        "alertname": "MeshrlRewardOutage",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "critical",
                                    "meshrl_rule": "reward_outage",
                                    "run": "r",
                                    "component": "math",
                                },
                                "exp_annotations": {
                                    "summary": "reward component math failed every result",
                                    "action": "none",
                                    "description": "run r (alert rule mirrors meshrl built-in rule reward_outage)",
                                },
                            }
                        ],
                    },
                    {"eval_time": "45s", "alertname": "MeshrlRewardBreakerOpen", "exp_alerts": []},
                    {
                        "eval_time": "60s",
                        "alertname": "MeshrlRewardBreakerOpen",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "critical",
                                    "meshrl_rule": "reward_outage",
                                    "run": "r",
                                    "component": "judge",
                                    "target": "10.0.0.7:50061",
                                },
                                "exp_annotations": {
                                    "summary": "calls to reward service 10.0.0.7:50061 (judge) are "
                                    "refused: its circuit breaker is open",
                                    "action": "none",
                                    "description": "run r (alert rule mirrors meshrl built-in rule reward_outage)",
                                },
                            }
                        ],
                    },
                ],
            },
            {
                "interval": "15s",
                "input_series": [
                    # run r: episodes finish until t=30s, then every episode's environment is unreachable;
                    # the 60 s window holds no finished episode from t=90s; `for: 30s` -> firing by 150s
                    {"series": 'meshrl_agent_episodes_total{ended="done",run="r"}', "values": "0 4 8+0x60"},
                    {
                        "series": 'meshrl_agent_episodes_dropped_total{reason="env_unavailable",run="r"}',
                        "values": "0 0 0 2+2x60",
                    },
                    # run s: the same, but every group dropped prompt_too_long: the 300 s window holds no
                    # finished episode from t=330s; `for: 300s` -> firing by 660s
                    {"series": 'meshrl_agent_episodes_total{ended="done",run="s"}', "values": "0 4 8+0x60"},
                    {
                        "series": 'meshrl_agent_episodes_dropped_total{reason="prompt_too_long",run="s"}',
                        "values": "0 0 0 2+2x60",
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "60s", "alertname": "MeshrlEnvOutage", "exp_alerts": []},
                    {
                        "eval_time": "150s",
                        "alertname": "MeshrlEnvOutage",
                        "exp_alerts": [expected("MeshrlEnvOutage", "env_outage", "critical", run="r")],
                    },
                    {"eval_time": "5m", "alertname": "MeshrlGroupsDroppedInARow", "exp_alerts": []},
                    {
                        "eval_time": "11m",
                        "alertname": "MeshrlGroupsDroppedInARow",
                        "exp_alerts": [expected("MeshrlGroupsDroppedInARow", "dropped_in_a_row", "critical", run="s")],
                    },
                ],
            },
        ],
    }


def test_the_rules_fire_when_the_built_in_alerts_would(tmp_path):
    tests = tmp_path / "rules-test.yml"
    tests.write_text(yaml.safe_dump(rule_tests(), sort_keys=False))
    result = promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


def dashboard_exprs() -> list[str]:
    panels = json.loads(DASHBOARD.read_text())["panels"]
    return [t["expr"] for p in panels for t in p.get("targets", [])]


def test_the_dashboard_is_well_formed():
    dash = json.loads(DASHBOARD.read_text())
    panels = dash["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    titles = {p["title"] for p in panels}
    for wanted in (
        "Reward",
        "Reward per component",
        "KL",
        "Entropy",
        "Clip fractions",
        "Throughput",
        "Step time split",
        "RPC latency p50 / p95",
        "Stage latency p50 / p95",
        "CPU cores busy",
        "External reward services",
        "meshrl alerts firing",
    ):
        assert wanted in titles
    for p in panels:
        assert 0 <= p["gridPos"]["x"] and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        for t in p.get("targets", []):
            assert t["datasource"]["uid"] == "${datasource}" and t["expr"] and t["refId"]
    assert [v["name"] for v in dash["templating"]["list"]] == ["datasource", "run"]


def exported_names(monkeypatch) -> set[str]:
    """Every metric name a real endpoint shows once each service's instruments have seen a
    group, the learner a full step, and one RPC and one stage ran. A stand-in torch.cuda (a
    fake, for this unit test only) makes the GPU gauges appear on this CPU machine."""
    cuda = types.SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        memory_allocated=lambda i: 1,
        memory_reserved=lambda i: 1,
        utilization=lambda i: 1,
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    group = common_pb2.Group(
        samples=[
            common_pb2.Sample(
                response_token_ids=b"\0" * 8,
                reward_components=[common_pb2.RewardComponent(name="math", status=common_pb2.SCORE_STATUS_OK)],
            )
        ]
    )
    with start_metrics("learner", "0", "run-d") as handle:
        for make in (
            lambda h: rollout_instruments(h, types.SimpleNamespace(version=1)),
            reward_instruments,
            reference_instruments,
        ):
            make(handle)(group)
        PrometheusLogger(handle).log(1, {key: 0.5 for key in STEP_KEYS})
        agent = AgentEvents(handle)  # a rollout's episodes: one finished, a group of 2 dropped
        agent.finished(common_pb2.Group(samples=[common_pb2.Sample()]), ["done"])
        agent.dropped("env_unavailable", 2)
        record_rpc("client", "/a.B/C", "OK", 0.1)
        calls = CallMetrics(handle, component="judge", target="10.0.0.7:50061")
        calls.call(0.2), calls.error("UNAVAILABLE"), calls.watch_breaker(lambda: 2)
        with timed_stage("rollout.generate"):
            pass
        text = handle.scrape()
    promtool_check(text)
    names = {m.group(1) for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)", text, re.M)}
    return names | {re.sub(r"_(bucket|count|sum)$", "", n) for n in names} | {"up"}


def test_every_metric_in_the_rules_and_dashboard_is_exported(monkeypatch):
    exported = exported_names(monkeypatch)
    rules = [a["expr"] for a in yaml.safe_load(RULES.read_text())["groups"][0]["rules"]]
    used = {
        m
        for expr in rules + dashboard_exprs()
        for m in re.findall(r"\b((?:meshrl|process)_[a-z0-9_]+|up|target_info)\b", expr)
    }
    assert used - exported == set()
    assert {
        "meshrl_rpc_duration_seconds_bucket",
        "meshrl_stage_duration_seconds_bucket",
        "process_cpu_seconds_total",
        "meshrl_reward_external_breaker_state",
    } <= used


def test_the_compose_observability_profile_mounts_rules_and_dashboard():
    compose_dir = OBS.parent / "compose"
    services = yaml.safe_load((compose_dir / "compose.yaml").read_text())["services"]

    def mounts(service: str) -> dict[str, Path]:
        pairs = (v.split(":")[:2] for v in services[service]["volumes"] if v.startswith("."))
        return {inside: (compose_dir / outside).resolve() for outside, inside in pairs}

    prometheus, grafana = mounts("prometheus"), mounts("grafana")
    assert prometheus["/etc/prometheus/rules/meshrl-alerts.yml"] == RULES
    assert grafana["/var/lib/grafana/dashboards/meshrl.json"] == DASHBOARD
    provider = yaml.safe_load(grafana["/etc/grafana/provisioning/dashboards/meshrl.yaml"].read_text())
    assert provider["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    config = yaml.safe_load((compose_dir / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]
    result = promtool("check", "config", "--syntax-only", str(compose_dir / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
