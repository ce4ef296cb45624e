"""TrainStep hands `algorithm.loss_options` to the policy loss and refuses ones it does not take."""

import pytest

from tests.unit.services.learner.train.helpers import random_batch
from tests.unit.services.learner.train.test_step import make_step


def test_loss_options_reach_the_policy_loss():
    step = make_step(policy_loss="sapo", kl_coef=0.0, loss_options={"tau_pos": 2.0, "tau_neg": 3.0})
    real, seen = step.policy_loss, []

    def spy_loss(**kwargs):  # a recording wrapper around the real sapo loss
        seen.append({k: kwargs[k] for k in ("tau_pos", "tau_neg")})
        return real(**kwargs)

    step.policy_loss = spy_loss
    step(random_batch(), 0)
    assert seen and all(s == {"tau_pos": 2.0, "tau_neg": 3.0} for s in seen)


def test_an_option_the_loss_does_not_take_is_refused_at_construction():
    with pytest.raises(ValueError, match="'tau_pos', which ppo does not take"):
        make_step(loss_options={"tau_pos": 2.0})
