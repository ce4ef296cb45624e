"""The config checks the parts it may name without torch nor a service (the table it reads
is kept equal to the registries by test_parts_table.py), and a part named by import path
(`package.module:function`) is checked at load from its source and found by the learner's
registry."""

import subprocess
import sys
import textwrap

import pytest

from meshrl.config import ConfigError, load_config, parts
from meshrl.config.alerts import AlertsConfig

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


def test_loading_a_config_imports_no_torch_and_no_service():
    code = (
        "import sys; from meshrl.config import load_config; "
        "load_config(base={'model': {'path': '/m'}, 'data': {'train': '/d.jsonl'}}); "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('meshrl.services.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_registered_alert_rule_has_a_config_section_and_nothing_else_does():
    from meshrl.alerts.registry import rule_names

    sections = set(AlertsConfig.model_fields) - {"enabled", "events_file", "webhook"}
    assert sections == set(rule_names())


def test_unknown_name_suggests_the_closest_and_lists_all():
    message = parts.unknown_name("algorithm.kl_estimator", "k33", ["k1", "k2", "k3"], "KL estimator")
    assert message == (
        "algorithm.kl_estimator='k33' is not a known KL estimator (did you mean 'k3'?). Valid: k1, k2, k3"
    )
    far = parts.unknown_name("algorithm.kl_estimator", "zzz", ["k1", "k3"], "KL estimator")
    assert far == "algorithm.kl_estimator='zzz' is not a known KL estimator. Valid: k1, k3"


@pytest.fixture
def my_pkg(tmp_path, monkeypatch):
    """A package of the user's own, on sys.path: one decorated estimator, one plain loss,
    one decorated loss at sequence level."""
    pkg = tmp_path / "my_pkg_parts"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "parts.py").write_text(
        textwrap.dedent("""
        import torch
        from meshrl.algos.registry import register_advantage_estimator, register_policy_loss
        from meshrl.algos.types import AdvantageResult, PolicyLossResult

        @register_advantage_estimator("test_critic_baseline", needs_values=True)
        def critic_baseline(*, rewards, response_mask, values=None, **_):
            adv = (rewards[:, None] - values) * response_mask
            return AdvantageResult(advantages=adv, returns=adv.clone())

        def plain_loss(*, logprobs, old_logprobs, advantages, response_mask, scale=2.0, **_):
            return PolicyLossResult(loss_mat=-scale * advantages * logprobs * response_mask, metrics={})

        @register_policy_loss("test_seq_loss", level="sequence")
        def seq_loss(*, logprobs, old_logprobs, advantages, response_mask, **_):
            return PolicyLossResult(loss_mat=-advantages * logprobs * response_mask, metrics={})
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_pkg_parts.parts"
    for name in [m for m in sys.modules if m.startswith("my_pkg_parts")]:
        del sys.modules[name]


def test_a_part_named_by_import_path_is_read_with_what_its_decorator_declares(my_pkg):
    algo = load_config(
        base={
            **BASE,
            "algorithm": {
                "advantage_estimator": f"{my_pkg}:critic_baseline",
                "critic": {"enabled": True},
                "policy_loss": f"{my_pkg}:plain_loss",
                "loss_options": {"scale": 3.0},
            },
        }
    ).algorithm
    assert algo.advantage_estimator == f"{my_pkg}:critic_baseline"
    assert "my_pkg_parts.parts" not in sys.modules  # read as source, not imported
    # a decorated estimator keeps what it declares: it needs a critic
    with pytest.raises(ConfigError, match="needs a critic's values: set algorithm.critic.enabled=true"):
        load_config(base={**BASE, "algorithm": {"advantage_estimator": f"{my_pkg}:critic_baseline"}})
    # an undecorated loss takes the defaults, and its keyword defaults are its options
    with pytest.raises(
        ConfigError, match=r"'bogus', which my_pkg_parts.parts:plain_loss does not take; its options: scale"
    ):
        load_config(base={**BASE, "algorithm": {"policy_loss": f"{my_pkg}:plain_loss", "loss_options": {"bogus": 1}}})
    with pytest.raises(ConfigError, match=r"importance_sampling_level='token' does nothing"):
        load_config(
            base={**BASE, "algorithm": {"policy_loss": f"{my_pkg}:seq_loss", "importance_sampling_level": "token"}}
        )


@pytest.mark.parametrize(
    "value, message",
    [
        (
            "no_such_pkg_xyz.parts:fn",
            r"cannot find module 'no_such_pkg_xyz.parts'|no Python module 'no_such_pkg_xyz.parts'",
        ),
        ("my_pkg_parts.nope:fn", r"no Python module 'my_pkg_parts.nope' here .* PYTHONPATH"),
        (
            "my_pkg_parts.parts:plain_los",
            r"defines no function 'plain_los'; did you mean 'plain_loss'\? Functions there: "
            r"critic_baseline, plain_loss, seq_loss",
        ),
        (
            "my_pkg_parts.parts:critic_baseline",
            r"is registered with @register_advantage_estimator \(advantage estimator\), "
            r"not as a policy loss",
        ),
    ],
)
def test_a_bad_import_path_is_refused_at_load_naming_the_fix(my_pkg, value, message):
    with pytest.raises(ConfigError, match=message):
        load_config(base={**BASE, "algorithm": {"policy_loss": value}})


def test_the_learner_s_registry_finds_the_same_parts_by_import_path(my_pkg):
    import torch

    from meshrl.algos import UnknownNameError, get_advantage_estimator, get_policy_loss

    estimator = get_advantage_estimator(f"{my_pkg}:critic_baseline")
    assert estimator.registered_name == "test_critic_baseline" and estimator.needs_values
    mask = torch.ones(2, 3)
    result = estimator(
        rewards=torch.tensor([1.0, 0.0]),
        response_mask=mask,
        group_ids=torch.tensor([0, 0]),
        values=torch.full((2, 3), 0.5),
    )
    assert torch.equal(result.advantages, torch.tensor([[0.5] * 3, [-0.5] * 3]))
    loss = get_policy_loss(f"{my_pkg}:plain_loss")  # undecorated: registered with the defaults
    assert (loss.level, loss.default_agg, loss.registered_name) == ("token", "token-mean", f"{my_pkg}:plain_loss")
    out = loss(
        logprobs=torch.full((2, 3), -1.0),
        old_logprobs=torch.full((2, 3), -1.0),
        advantages=torch.ones(2, 3),
        response_mask=mask,
        scale=3.0,
    )
    assert torch.equal(out.loss_mat, torch.full((2, 3), 3.0))
    with pytest.raises(UnknownNameError, match="registered as another kind of part"):
        get_policy_loss(f"{my_pkg}:critic_baseline")
    for name in ("test_critic_baseline", "test_seq_loss"):
        from meshrl.algos.registry import ADVANTAGE_ESTIMATORS, POLICY_LOSSES

        ADVANTAGE_ESTIMATORS.remove(name), POLICY_LOSSES.remove(name)
    for path in (f"{my_pkg}:critic_baseline", f"{my_pkg}:plain_loss", f"{my_pkg}:critic_baseline"):
        ADVANTAGE_ESTIMATORS.remove(path), POLICY_LOSSES.remove(path)
