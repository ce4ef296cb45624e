"""Preference losses (TRL's loss_type catalogue): values and gradients worked by hand."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import dpo_loss, get_preference_loss, list_preference_losses
from meshrl.config.algorithm import AlgorithmConfig

# chosen log-ratios c = (1, 0), rejected r = (−1, 1); policy margins (2, −1), reference 0; β = ½
PAIRS = dict(
    policy_chosen=torch.tensor([-1.0, -2.0]),
    policy_rejected=torch.tensor([-3.0, -1.0]),
    ref_chosen=torch.tensor([-2.0, -2.0]),
    ref_rejected=torch.tensor([-2.0, -2.0]),
)
LENGTHS = dict(chosen_lengths=torch.tensor([2.0, 4.0]), rejected_lengths=torch.tensor([1.0, 2.0]))


def sig(x):
    return 1.0 / (1.0 + math.exp(-x))


def logsig(x):
    return math.log(sig(x))


def loss_of(kind, **kwargs):
    loss, _ = dpo_loss(**PAIRS, beta=0.5, kind=kind, **LENGTHS, **kwargs)
    return loss


@pytest.mark.parametrize(
    "kind, options, expected",
    [
        # (−0.9·log σ(βh) + 0.1·log σ(−βh)) / 0.8 with βh = 1, −½
        (
            "robust",
            {"label_smoothing": 0.1},
            [(-0.9 * logsig(1) + 0.1 * logsig(-1)) / 0.8, (-0.9 * logsig(-0.5) + 0.1 * logsig(0.5)) / 0.8],
        ),
        # σ(z)(log σ(z) − log 0.999) + σ(−z)(log σ(−z) − log 0.001), z = βh (ε defaults to 1e-3)
        (
            "exo_pair",
            {},
            [sig(z) * (logsig(z) - math.log(0.999)) + sig(-z) * (logsig(-z) - math.log(1e-3)) for z in (1.0, -0.5)],
        ),
        # −log σ(βc) − ½ log σ(−βc) − ½ log σ(−βr): βc = (½, 0), βr = (−½, ½)
        (
            "nca_pair",
            {},
            [
                -logsig(0.5) - 0.5 * logsig(-0.5) - 0.5 * logsig(0.5),
                -logsig(0.0) - 0.5 * logsig(0.0) - 0.5 * logsig(-0.5),
            ],
        ),
        # (c − 1)² + (r + 1)² with 1/(2β) = 1
        ("sppo_hard", {}, [0.0, 1.0 + 4.0]),
        # (1 − σ(βc)) + σ(βr)
        ("apo_zero", {}, [1 - sig(0.5) + sig(-0.5), 1 - sig(0.0) + sig(0.5)]),
        # σ(βc) + (1 − σ(β(c − r)))
        ("apo_down", {}, [sig(0.5) + 1 - sig(1.0), sig(0.0) + 1 - sig(-0.5)]),
        # m = σ(z/τ), (1 − m)·(−log σ(z)) + m·e^−z, z = βh = (1, −½), τ = 0.05
        (
            "discopop",
            {},
            [
                (1 - sig(20)) * -logsig(1) + sig(20) * math.exp(-1),
                (1 - sig(-10)) * -logsig(-0.5) + sig(-10) * math.exp(0.5),
            ],
        ),
        # length-averaged h̄ = c/|y_w| − r/|y_l| = (½ + 1, 0 − ½) = (1.5, −0.5)
        ("sigmoid_norm", {}, [-logsig(0.75), -logsig(-0.25)]),
        ("ipo", {}, [(1.5 - 1) ** 2, (-0.5 - 1) ** 2]),
        # sorted policy margins (−1, 2) − sorted reference margins (0, 0)
        ("aot", {}, [-logsig(-0.5), -logsig(1.0)]),
        # sort(c) − sort(r) = (0, 1) − (−1, 1) = (1, 0)
        ("aot_unpaired", {}, [-logsig(0.5), math.log(2)]),
        # js: h = c − r − (softplus(c) − softplus(r)) = (2 − 1, −1 − (log 2 − log(1 + e)))
        (
            "sigmoid",
            {"f_divergence": "js_divergence"},
            [-logsig(0.5), -logsig(0.5 * (-1 - (math.log(2) - math.log1p(math.e))))],
        ),
        # α = 1: h = e^−r − e^−c = (e − 1/e, 1/e − 1)
        (
            "sigmoid",
            {"f_divergence": "alpha_divergence", "f_alpha": 1.0},
            [-logsig(0.5 * (math.e - 1 / math.e)), -logsig(0.5 * (1 / math.e - 1))],
        ),
    ],
)
def test_preference_loss_values(kind, options, expected):
    assert_close(loss_of(kind, options=options), torch.tensor(expected))


def gradients(kind, **kwargs):
    policy = {k: PAIRS[k].clone().requires_grad_(True) for k in ("policy_chosen", "policy_rejected")}
    loss, _ = dpo_loss(**{**PAIRS, **policy}, beta=0.5, kind=kind, **LENGTHS, **kwargs)
    loss.sum().backward()
    return policy["policy_chosen"].grad, policy["policy_rejected"].grad


def test_gradients_by_hand():
    # sppo_hard: ∂/∂c = 2(c − 1) = (0, −2); ∂/∂r = 2(r + 1) = (0, 4)
    chosen, rejected = gradients("sppo_hard")
    assert_close(chosen, torch.tensor([0.0, -2.0]))
    assert_close(rejected, torch.tensor([0.0, 4.0]))
    # ipo: ∂/∂c = 2(h̄ − 1)/|y_w| = (2·½/2, 2·(−1.5)/4); ∂/∂r = −2(h̄ − 1)/|y_l| = (−1, 1.5)
    chosen, rejected = gradients("ipo")
    assert_close(chosen, torch.tensor([0.5, -0.75]))
    assert_close(rejected, torch.tensor([-1.0, 1.5]))
    # nca_pair pair 0: ∂/∂c = −β(1 − σ(βc)) + ½β·σ(βc); ∂/∂r = ½β·σ(βr), βc = ½, βr = −½
    chosen, rejected = gradients("nca_pair")
    assert chosen[0].item() == pytest.approx(-0.5 * (1 - sig(0.5)) + 0.25 * sig(0.5), abs=1e-6)
    assert rejected[0].item() == pytest.approx(0.25 * sig(-0.5), abs=1e-6)
    # apo_zero: ∂/∂c = −β·σ'(βc), ∂/∂r = β·σ'(βr), σ' = σ(1 − σ)
    chosen, rejected = gradients("apo_zero")
    assert chosen[0].item() == pytest.approx(-0.5 * sig(0.5) * (1 - sig(0.5)), abs=1e-6)
    assert rejected[1].item() == pytest.approx(0.5 * sig(0.5) * (1 - sig(0.5)), abs=1e-6)


def test_weighted_sum_of_losses():
    sigmoid, hinge = loss_of("sigmoid"), loss_of("hinge")
    assert_close(loss_of(["sigmoid", "hinge"], weights=[1.0, 0.5]), sigmoid + 0.5 * hinge)
    with pytest.raises(ValueError, match="2 weights for 1 losses"):
        loss_of(["sigmoid"], weights=[1.0, 2.0])


def test_bco_pair_keeps_a_running_mean_reward_in_state():
    # rewards βc = (½, 0), βr = (−½, ½): δ = mean = 0.125 after the first batch
    state = {}
    loss = loss_of("bco_pair", state=state)
    assert state["bco_delta"] == pytest.approx(0.125)
    assert loss[0].item() == pytest.approx(-logsig(0.5 - 0.125) - logsig(0.5 + 0.125), abs=1e-6)
    # second batch, chosen +2 (βc = (1.5, 1)): batch mean 0.625, running (4·0.125 + 4·0.625)/8
    shifted = {**PAIRS, "policy_chosen": PAIRS["policy_chosen"] + 2.0}
    dpo_loss(**shifted, beta=0.5, kind="bco_pair", state=state)
    assert state["bco_delta"] == pytest.approx(0.375)
    assert state["bco_count"] == 8


def test_options_the_losses_do_not_take_are_refused():
    with pytest.raises(ValueError, match="'discopop_tau', which sigmoid does not take"):
        loss_of("sigmoid", options={"discopop_tau": 0.1})
    with pytest.raises(ValueError, match="set algorithm.epsilon"):
        loss_of("sigmoid", options={"epsilon": 0.1})
    with pytest.raises(ValueError, match="pass chosen_lengths and rejected_lengths"):
        dpo_loss(**PAIRS, beta=0.5, kind="ipo")
    with pytest.raises(ValueError, match="f_divergence='kl'"):
        loss_of("sigmoid", options={"f_divergence": "kl"})


def test_every_loss_has_a_paper_and_the_dpo_preset_names_a_registered_one():
    from meshrl.config import load_config

    for name in list_preference_losses():
        assert "arXiv:" in get_preference_loss(name).paper, name
    cfg = load_config(base={"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "dpo"}})
    assert cfg.algorithm.preference_losses == ["sigmoid"]
    assert cfg.algorithm.preference_losses[0] in list_preference_losses()


def test_config_reads_the_loss_from_policy_loss_or_a_weighted_dpo_loss_type():
    algo = AlgorithmConfig(
        policy_loss="dpo", offline=True, dpo_loss_type=["sigmoid", "bco_pair"], dpo_loss_weights=[1.0, 0.2]
    )
    assert algo.preference_losses == ["sigmoid", "bco_pair"]
    with pytest.raises(ValueError, match="2 weights for 1 preference losses"):
        AlgorithmConfig(policy_loss="ipo", offline=True, dpo_loss_weights=[1.0, 1.0])
    with pytest.raises(ValueError, match="dpo_loss_type='hinge' would be ignored"):
        AlgorithmConfig(policy_loss="ipo", offline=True, dpo_loss_type="hinge")
    with pytest.raises(ValueError, match="algorithm.offline=true"):
        AlgorithmConfig(policy_loss="ipo")
