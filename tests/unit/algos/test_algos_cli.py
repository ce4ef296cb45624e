"""`meshrl algos` lists every registered part with its options and paper; --help stays torch-free."""

import subprocess
import sys

import pytest

from meshrl.algos import (
    list_advantage_estimators,
    list_agg_modes,
    list_dpo_kinds,
    list_kl_estimators,
    list_policy_losses,
)
from meshrl.algos.catalog import registered_parts, split_doc
from meshrl.algos.loss_masks.registry import LOSS_MASKS
from meshrl.algos.preference_weighting.registry import PREFERENCE_WEIGHTINGS
from meshrl.algos.resampling.registry import REWEIGHTINGS
from meshrl.algos.rollout_correction import REJECTION_CRITERIA, ROLLOUT_CORRECTION_MODES
from meshrl.cli.main import main


def test_every_registered_part_is_listed_once_with_a_paper():
    parts = registered_parts()
    by_family = {}
    for part in parts:
        by_family.setdefault(part.family.split()[0], []).append(part.name)
        assert part.paper, f"{part.family} {part.name} names no paper"
    assert sorted(by_family["advantage"]) == list_advantage_estimators()
    assert sorted(by_family["policy"]) == list_policy_losses()
    assert sorted(by_family["KL"]) == list_kl_estimators()
    assert sorted(by_family["preference"]) == list_dpo_kinds()
    assert sorted(by_family["rollout-correction"]) == list(ROLLOUT_CORRECTION_MODES)
    assert sorted(by_family["rejection"]) == list(REJECTION_CRITERIA)
    assert sorted(by_family["loss"]) == sorted([*list_agg_modes(), *LOSS_MASKS.names()])
    assert sorted(by_family["PF-PPO"]) == REWEIGHTINGS.names()
    assert sorted(by_family["DPO"]) == PREFERENCE_WEIGHTINGS.names() == ["ld", "wpo"]


def test_options_come_from_the_signature_without_the_inputs():
    grpo = next(p for p in registered_parts() if p.name == "grpo")
    assert "rewards" not in grpo.options and "step" not in grpo.options
    assert grpo.options["norm_by_std"] is True
    ppo = next(p for p in registered_parts() if p.name == "ppo")
    assert {k: ppo.options[k] for k in ("epsilon", "epsilon_high", "dual_clip_c")} == {
        "epsilon": 0.2,
        "epsilon_high": None,
        "dual_clip_c": None,
    }
    assert ppo.notes == "default_agg=token-mean"


def test_split_doc_separates_formula_and_paper():
    assert split_doc("max(0, 1 − β·h) (Zhao et al. 2023, arXiv:1).") == ("max(0, 1 − β·h)", "Zhao et al. 2023, arXiv:1")


def test_cli_prints_each_family_and_filters_by_prefix(capsys):
    assert main(["algos"]) == 0
    out = capsys.readouterr().out
    for heading in (
        "advantage estimators:",
        "policy losses:",
        "KL estimators:",
        "loss aggregation modes:",
        "preference losses",
    ):
        assert heading in out
    assert "      paper: Schulman et al. 2017, Proximal Policy Optimization Algorithms" in out
    assert "  gae  (needs a critic's values)" in out
    # the inputs the mesh produces on demand for them (greedy samples, Σπ² in the old pass)
    assert "  remax  (needs greedy_rewards)" in out and "arXiv:2310.10505" in out
    assert "  optimal_token_baseline  (needs old_logprobs, sum_pi_squared)" in out
    assert main(["algos", "kl"]) == 0
    only_kl = capsys.readouterr().out
    assert only_kl.startswith("KL estimators:\n") and "policy losses" not in only_kl


def test_cli_unknown_family_exits_2(capsys):
    assert main(["algos", "nope"]) == 2
    assert "no family starts with 'nope'" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [["--help"], ["algos", "--help"]])
def test_help_does_not_import_torch(argv):
    code = (
        "import sys; from meshrl.cli.main import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_cli_lists_the_other_registries_by_name_from_the_same_mechanism(capsys):
    from meshrl.services.reward.registry import REWARD_RULES

    assert main(["algos", "reward"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "reward rules (@register_reward):"
    assert [line.split()[0] for line in lines[1:]] == REWARD_RULES.names()
    assert "  math_verify  (meshrl.services.reward.rules.math_answer.math_verify)" in lines
    assert main(["algos", "tool"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("  hermes  (")
