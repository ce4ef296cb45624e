"""Resuming under another model or algorithm is refused, naming each differing key."""

import copy

import pytest
import torch

from meshrl.inputs.checkpoint import (
    DEFAULT_KEYS,
    IncompatibleCheckpointError,
    check_compatible,
    hash_config,
    load_checkpoint,
    read_config,
)
from tests.unit.inputs.checkpoint.conftest import CONFIG
from tests.unit.inputs.checkpoint.helpers import tiny_model, trainer


def test_differing_keys_are_named_with_both_values():
    new = copy.deepcopy(CONFIG)
    new["model"]["path"] = "/models/other"
    new["algorithm"]["policy_loss"] = "gspo"
    new["algorithm"]["kl_coef"] = 0.0  # a knob: allowed to change
    with pytest.raises(IncompatibleCheckpointError) as err:
        check_compatible(CONFIG, new)
    msg = str(err.value)
    assert "model.path: checkpoint has '/models/tiny', new config has '/models/other'" in msg
    assert "algorithm.policy_loss: checkpoint has 'ppo', new config has 'gspo'" in msg
    assert "kl_coef" not in msg and "advantage_estimator" not in msg


def test_equal_configs_and_custom_keys():
    check_compatible(CONFIG, copy.deepcopy(CONFIG))
    new = copy.deepcopy(CONFIG)
    new["algorithm"]["kl_coef"] = 0.5
    check_compatible(CONFIG, new)
    with pytest.raises(IncompatibleCheckpointError, match=r"algorithm.kl_coef: checkpoint has 0.04"):
        check_compatible(CONFIG, new, keys=DEFAULT_KEYS + ("algorithm.kl_coef",))
    del new["algorithm"]["critic"]
    with pytest.raises(IncompatibleCheckpointError, match="new config has '<absent>'"):
        check_compatible(CONFIG, new)


def test_load_refuses_before_touching_the_model(save_run):
    run = save_run([1])
    assert read_config(run / "checkpoints/step_1") == CONFIG
    new = copy.deepcopy(CONFIG)
    new["algorithm"]["advantage_estimator"] = "gae"
    model = tiny_model(seed=9)
    optimizer, _ = trainer(model)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(IncompatibleCheckpointError, match="algorithm.advantage_estimator"):
        load_checkpoint(run, model=model, optimizer=optimizer, new_config=new)
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert load_checkpoint(run, model=model, new_config=CONFIG) == {"step": 1}


def test_hash_config_is_order_independent():
    assert hash_config({"a": 1, "b": {"c": 2}}) == hash_config({"b": {"c": 2}, "a": 1})
    assert hash_config({"a": 1}) != hash_config({"a": 2})
