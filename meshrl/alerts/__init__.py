"""meshrl.alerts: rules that watch a run and alert when training goes wrong.

    from meshrl.alerts import AlertEngine, AlertsConfig, strongest_action
    engine = AlertEngine.from_config(AlertsConfig(), run_dir, run_id="r1")
    alerts = engine.observe(step, metrics)

Rules (one file per family in `rules/`, registered by `@register_rule`): kl_high,
entropy_collapse, reward_nan, reward_flat, nonfinite, spike, rollout_stalled,
memory_growth, service_down. Sinks in `sinks/`. Nothing here imports torch.
"""

# The rules' settings are config (`RunConfig.alerts`), so they live in meshrl.config; re-exported
# here for the engine's users.
from meshrl.alerts.engine import AlertEngine
from meshrl.alerts.registry import register_rule, rule_names
from meshrl.alerts.types import Alert, Condition, strongest_action
from meshrl.config.alerts import AlertsConfig

__all__ = ["Alert", "AlertEngine", "AlertsConfig", "Condition", "register_rule", "rule_names", "strongest_action"]
