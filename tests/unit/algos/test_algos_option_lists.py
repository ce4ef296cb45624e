"""The loss options the config reads from the parts' source equal the registered signatures,
so `loss_options` is checked at load time (meshrl train --dry-run) exactly as the learner would."""

import pytest

from meshrl.algos.options import DEDICATED, part_options
from meshrl.algos.registry import POLICY_LOSSES, PREFERENCE_LOSSES
from meshrl.config import parts
from meshrl.config.algorithm import AlgorithmConfig


def test_loss_options_lists_match_the_registered_signatures():
    import meshrl.algos  # noqa: F401  (registers the built-ins)

    registered = {
        name: tuple(k for k in part_options(reg.get(name)) if k not in DEDICATED)
        for reg in (POLICY_LOSSES, PREFERENCE_LOSSES)
        for name in reg.names()
    }
    declared = {
        name: d.options for family in (parts.policy_losses, parts.preference_losses) for name, d in family().items()
    }
    assert registered == declared


def test_config_refuses_options_the_chosen_loss_does_not_take():
    assert AlgorithmConfig(policy_loss="sapo", loss_options={"tau_neg": 2.0}).loss_options == {"tau_neg": 2.0}
    with pytest.raises(ValueError, match="'tau_neg', which ppo does not take; its options: delta"):
        AlgorithmConfig(loss_options={"tau_neg": 2.0})
    with pytest.raises(ValueError, match="sets 'epsilon', which has its own key: set algorithm.epsilon"):
        AlgorithmConfig(loss_options={"epsilon": 0.1})
    # offline: the options of every preference loss in the weighted list
    AlgorithmConfig(
        policy_loss="dpo",
        offline=True,
        dpo_loss_type=["sigmoid", "discopop"],
        loss_options={"discopop_tau": 0.1, "label_smoothing": 0.1},
    )
    with pytest.raises(ValueError, match="'dro_beta', which ipo does not take"):
        AlgorithmConfig(policy_loss="ipo", offline=True, loss_options={"dro_beta": 1.0})


@pytest.mark.parametrize(
    "preset, loss, epsilon, agg",
    [("gmpo", "gmpo", 0.4, "seq-mean-token-mean"), ("luspo", "luspo", 3e-4, "seq-mean-token-sum")],
)
def test_presets_for_the_new_sequence_level_losses(preset, loss, epsilon, agg):
    from meshrl.config import load_config

    algo = load_config(
        base={"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": preset}}
    ).algorithm
    assert (algo.policy_loss, algo.epsilon, algo.loss_agg_mode) == (loss, epsilon, agg)
