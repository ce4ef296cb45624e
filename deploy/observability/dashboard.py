"""The Grafana dashboard for a meshrl run, as data (written to grafana/meshrl.json by generate.py).

    python deploy/observability/generate.py     # then import grafana/meshrl.json, or let the
                                                # compose file's observability profile provision it

Three rows: training (the learner's step metrics: reward, reward per component (a `component`
label), KL, entropy, lengths and truncation, clip fractions, grad norm, throughput, staleness,
queue depth per stage, the step-time split), the mesh
(groups per service and replica, reward component results, RPC and stage latency
percentiles, the policy version each rollout replica holds, firing alerts) and resources (CPU
cores and memory per service, the process and its children, GPU). Variables: the Prometheus
data source and the run (from target_info, which every meshrl endpoint exports). Simplified:
one panel kind (timeseries) besides the alert list; no per-user layout.
"""

from __future__ import annotations

UID = "meshrl-run"
DS = {"type": "prometheus", "uid": "${datasource}"}
RUN = 'run=~"$run"'
WIDTH, HEIGHT = 8, 8


def target(expr: str, legend: str, ref: str) -> dict:
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref}


def timeseries(title: str, queries: list[tuple[str, str]], unit: str = "short", stacked: bool = False) -> dict:
    """A timeseries panel; `queries` are (PromQL, legend) pairs. Positions are set by `layout`."""
    custom = {"stacking": {"mode": "normal" if stacked else "none"}, "fillOpacity": 30 if stacked else 0}
    return {
        "type": "timeseries",
        "title": title,
        "datasource": DS,
        "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": []},
        "targets": [target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(queries)],
    }


def train(name: str) -> str:
    return f"meshrl_train_{name}{{{RUN}}}"


def training_panels() -> list[dict]:
    return [
        timeseries("Reward", [(train("reward"), "mean"), (train("reward_max"), "max"), (train("reward_min"), "min")]),
        timeseries(
            "Reward per component",
            [
                (train("reward_component"), "{{component}}"),
                (train("reward_component_failed_scores"), "{{component}} failed scores"),
            ],
        ),
        timeseries(
            "KL", [(train("kl"), "kl"), (train("approx_kl"), "approx_kl"), (train("mismatch_kl"), "mismatch_kl")]
        ),
        timeseries("Entropy", [(train("entropy"), "entropy")]),
        timeseries(
            "Response length", [(train("completions_mean_length"), "mean"), (train("completions_max_length"), "max")]
        ),
        timeseries("Truncated responses", [(train("completions_clipped_ratio"), "clipped")], "percentunit"),
        timeseries(
            "Clip fractions",
            [(train("clip_ratio_low"), "low"), (train("clip_ratio_high"), "high"), (train("clip_ratio_dual"), "dual")],
            "percentunit",
        ),
        timeseries("Grad norm and loss", [(train("grad_norm"), "grad norm"), (train("loss"), "loss")]),
        timeseries("Throughput", [(train("perf_throughput_tokens_per_second"), "tokens/s")]),
        timeseries("Staleness", [(train("staleness_mean"), "mean policy versions behind")]),
        timeseries("Queue depth", [(train("queue_depth"), "{{stage}}")]),
        timeseries(
            "Step time split",
            [(f'meshrl_train_step_phase_seconds{{{RUN}, phase!~"step|train"}}', "{{phase}}")],
            "s",
            stacked=True,
        ),
    ]


def quantile(q: float, histogram: str, by: str) -> str:
    return f"histogram_quantile({q}, sum by (le, {by}) (rate({histogram}_bucket{{{RUN}}}[5m])))"


def mesh_panels() -> list[dict]:
    rpc, stage = "meshrl_rpc_duration_seconds", "meshrl_stage_duration_seconds"
    return [
        timeseries(
            "Groups per second",
            [
                (
                    f"sum by (service, replica) (rate(meshrl_groups_generated_total{{{RUN}}}[1m]))",
                    "{{service}} {{replica}} generated",
                ),
                (
                    f"sum by (service, replica) (rate(meshrl_groups_scored_total{{{RUN}}}[1m]))",
                    "{{service}} {{replica}} scored",
                ),
            ],
        ),
        timeseries(
            "Reward component results",
            [
                (
                    f"sum by (component, status) (rate(meshrl_reward_component_scores_total{{{RUN}}}[1m]))",
                    "{{component}} {{status}}",
                )
            ],
        ),
        timeseries(
            "External reward services",
            [
                (
                    quantile(0.95, "meshrl_reward_external_call_seconds", "component, target"),
                    "p95 s {{component}} {{target}}",
                ),
                (
                    f"sum by (component, target, code) (rate(meshrl_reward_external_errors_total{{{RUN}}}[1m]))",
                    "errors/s {{component}} {{code}}",
                ),
                (
                    f"max by (component, target) (meshrl_reward_external_breaker_state{{{RUN}}})",
                    "breaker {{component}} (0 closed, 1 half-open, 2 open)",
                ),
            ],
        ),
        timeseries(
            "RPC latency p50 / p95",
            [
                (quantile(0.5, rpc, "rpc_side, rpc_method"), "p50 {{rpc_side}} {{rpc_method}}"),
                (quantile(0.95, rpc, "rpc_side, rpc_method"), "p95 {{rpc_side}} {{rpc_method}}"),
            ],
            "s",
        ),
        timeseries(
            "Stage latency p50 / p95",
            [(quantile(0.5, stage, "stage"), "p50 {{stage}}"), (quantile(0.95, stage, "stage"), "p95 {{stage}}")],
            "s",
        ),
        timeseries(
            "Policy version held",
            [(f"meshrl_policy_version{{{RUN}}}", "{{service}} {{replica}}"), (train("weights_version"), "learner")],
        ),
        timeseries(
            "Non-finite values", [(f"increase(meshrl_train_nonfinite_values_total{{{RUN}}}[5m]) > 0", "{{metric}}")]
        ),
        {
            "type": "alertlist",
            "title": "meshrl alerts firing",
            "options": {"alertName": "Meshrl", "stateFilter": {"firing": True, "pending": True}, "maxItems": 20},
        },
    ]


def resource_panels() -> list[dict]:
    return [
        timeseries(
            "CPU cores busy",
            [
                ('sum by (service) (rate(process_cpu_seconds_total{job="meshrl"}[1m]))', "{{service}}"),
                (
                    f"sum by (service) (rate(meshrl_child_processes_cpu_seconds_total{{{RUN}}}[1m]))",
                    "{{service}} children",
                ),
            ],
        ),
        timeseries(
            "Resident memory",
            [
                ('sum by (service) (process_resident_memory_bytes{job="meshrl"})', "{{service}}"),
                (f"sum by (service) (meshrl_child_processes_resident_memory_bytes{{{RUN}}})", "{{service}} children"),
            ],
            "bytes",
        ),
        timeseries(
            "GPU",
            [
                (f"meshrl_gpu_utilization_ratio{{{RUN}}}", "{{service}} gpu{{gpu}} busy"),
                (f"meshrl_gpu_memory_reserved_bytes{{{RUN}}} / 2^30", "{{service}} gpu{{gpu}} GiB reserved"),
            ],
        ),
    ]


def row(title: str, y: int, panel_id: int) -> dict:
    return {
        "type": "row",
        "title": title,
        "id": panel_id,
        "collapsed": False,
        "gridPos": {"h": 1, "w": 24, "x": 0, "y": y},
        "panels": [],
    }


def layout(sections: list[tuple[str, list[dict]]]) -> list[dict]:
    """Rows of three panels each; ids and grid positions assigned in order."""
    panels, y, next_id = [], 0, 1
    for title, members in sections:
        panels.append(row(title, y, next_id))
        y, next_id = y + 1, next_id + 1
        for i, panel in enumerate(members):
            x = (i % 3) * WIDTH
            panels.append(
                {"id": next_id, "gridPos": {"h": HEIGHT, "w": WIDTH, "x": x, "y": y + (i // 3) * HEIGHT}, **panel}
            )
            next_id += 1
        y += -(-len(members) // 3) * HEIGHT
    return panels


def variables() -> list[dict]:
    return [
        {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus"},
        {
            "type": "query",
            "name": "run",
            "label": "Run",
            "datasource": DS,
            "refresh": 2,
            "query": {"query": "label_values(target_info, run)", "refId": "run"},
            "definition": "label_values(target_info, run)",
            "includeAll": True,
            "multi": True,
            "current": {"text": "All", "value": "$__all"},
        },
    ]


def dashboard() -> dict:
    return {
        "uid": UID,
        "title": "meshrl run",
        "tags": ["meshrl"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "15s",
        "time": {"from": "now-1h", "to": "now"},
        "templating": {"list": variables()},
        "panels": layout([("Training", training_panels()), ("Mesh", mesh_panels()), ("Resources", resource_panels())]),
    }
