"""The config's torch-free part names equal the registries they stand for."""
import sys

from meshrl.config import parts
from meshrl.config.alerts import AlertsConfig


def test_loading_a_config_imports_no_torch_and_no_service():
    import subprocess
    code = ("import sys; from meshrl.config import load_config; "
            "load_config(base={'model': {'path': '/m'}, 'data': {'train': '/d.jsonl'}}); "
            "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('meshrl.services')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_advantage_estimators_and_their_need_for_values_match_the_registry():
    from meshrl.algos.registry import get_advantage_estimator, list_advantage_estimators
    import meshrl.algos  # noqa: F401  (registers the built-ins)

    assert sorted(parts.ADVANTAGE_ESTIMATORS) == list_advantage_estimators()
    for name, needs_values in parts.ADVANTAGE_ESTIMATORS.items():
        assert get_advantage_estimator(name).needs_values is needs_values, name
        # the extra inputs it declares (`needs=`), which the feeder reads without torch
        assert get_advantage_estimator(name).needs == set(parts.estimator_needs(name)), name


def test_policy_losses_aggregations_kl_and_dpo_kinds_match_meshrl_algos():
    from meshrl.algos import list_agg_modes, list_dpo_kinds, list_kl_estimators, list_policy_losses

    assert sorted(parts.POLICY_LOSSES) == list_policy_losses()
    assert parts.OFFLINE_POLICY_LOSS not in parts.POLICY_LOSSES
    assert list(parts.LOSS_AGG_MODES) == list_agg_modes()
    assert list(parts.KL_ESTIMATORS) == list_kl_estimators()
    assert list(parts.DPO_LOSS_TYPES) == list_dpo_kinds()


def test_reward_rule_kinds_match_the_reward_service_registry():
    from meshrl.services.reward.registry import RULES, get_rule

    get_rule("math_verify")  # imports the built-in rules
    assert sorted(parts.REWARD_RULE_KINDS) == sorted(RULES)
    assert parts.EXTERNAL_REWARD_KIND not in RULES


def test_tool_parsers_match_the_rollout_registry():
    from meshrl.services.rollout.agent.parsers import list_tool_parsers

    assert list(parts.TOOL_PARSERS) == list_tool_parsers()


def test_every_registered_alert_rule_has_a_config_section_and_nothing_else_does():
    from meshrl.alerts.registry import rule_names

    sections = set(AlertsConfig.model_fields) - {"enabled", "events_file", "webhook"}
    assert sections == set(rule_names())


def test_unknown_name_suggests_the_closest_and_lists_all():
    message = parts.unknown_name("algorithm.kl_estimator", "k33", ["k1", "k2", "k3"], "KL estimator")
    assert message == ("algorithm.kl_estimator='k33' is not a known KL estimator; did you mean "
                       "'k3'? Valid: k1, k2, k3")
    far = parts.unknown_name("algorithm.kl_estimator", "zzz", ["k1", "k3"], "KL estimator")
    assert far == "algorithm.kl_estimator='zzz' is not a known KL estimator. Valid: k1, k3"
