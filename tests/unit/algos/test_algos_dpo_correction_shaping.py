"""DPO preference losses, rollout (engine vs trainer) correction, DAPO shaping."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import UnknownNameError, dpo_loss, groups_with_signal, overlong_penalty, rollout_correction

# pair 0: chosen log-ratio (−1) − (−2) = 1, rejected (−3) − (−2) = −1 → h = 2
# pair 1: chosen (−2) − (−2) = 0, rejected (−1) − (−2) = 1 → h = −1;  β = 0.5
PAIRS = dict(
    policy_chosen=torch.tensor([-1.0, -2.0]),
    policy_rejected=torch.tensor([-3.0, -1.0]),
    ref_chosen=torch.tensor([-2.0, -2.0]),
    ref_rejected=torch.tensor([-2.0, -2.0]),
)


@pytest.mark.parametrize(
    "kind, expected",
    [
        # −log σ(βh): βh = 1 → log(1 + e^−1) = 0.313262; βh = −0.5 → log(1 + e^0.5) = 0.974077
        ("sigmoid", [math.log1p(math.exp(-1)), math.log1p(math.exp(0.5))]),
        # (h − 1/(2β))² with 1/(2β) = 1 and one-token responses (IPO averages over length):
        # (2 − 1)² = 1; (−1 − 1)² = 4
        ("ipo", [1.0, 4.0]),
        # relu(1 − βh): relu(1 − 1) = 0; relu(1 + 0.5) = 1.5
        ("hinge", [0.0, 1.5]),
    ],
)
def test_dpo_kinds(kind, expected):
    ones = torch.ones(2)
    loss, _ = dpo_loss(**PAIRS, beta=0.5, kind=kind, chosen_lengths=ones, rejected_lengths=ones)
    assert_close(loss, torch.tensor(expected))


def test_dpo_metrics_and_label_smoothing():
    _, metrics = dpo_loss(**PAIRS, beta=0.5)
    # implicit rewards β·log-ratio: chosen (0.5, 0), rejected (−0.5, 0.5)
    assert metrics["rewards/chosen"].item() == pytest.approx(0.25)
    assert metrics["rewards/rejected"].item() == pytest.approx(0.0)
    assert metrics["rewards/margins"].item() == pytest.approx(0.25)  # mean(1, −0.5)
    assert metrics["rewards/accuracies"].item() == pytest.approx(0.5)
    # ε = 0.1, βh = 1: 0.9·log(1 + e^−1) + 0.1·log(1 + e) = 0.281936 + 0.131326 = 0.413262
    loss, _ = dpo_loss(**PAIRS, beta=0.5, label_smoothing=0.1)
    assert loss[0].item() == pytest.approx(0.413262, abs=1e-5)


def test_dpo_gradient_flows_to_policy_only_and_unknown_kind():
    chosen = PAIRS["policy_chosen"].clone().requires_grad_(True)
    ref = PAIRS["ref_chosen"].clone().requires_grad_(True)
    loss, _ = dpo_loss(**{**PAIRS, "policy_chosen": chosen, "ref_chosen": ref}, beta=0.5)
    loss.sum().backward()
    # ∂/∂π_c of −log σ(βh) = −β·σ(−βh): pair 0: −0.5·σ(−1) = −0.134471
    assert chosen.grad[0].item() == pytest.approx(-0.5 / (1 + math.e), abs=1e-6)
    assert ref.grad is None
    with pytest.raises(UnknownNameError, match="registered: aot, aot_unpaired"):
        dpo_loss(**PAIRS, kind="kto")


# log ρ = old − behaviour = (ln 3, ln 0.25, ln 1.5, pad 5); cap = 2 (ln 2 = 0.693)
OLD = torch.zeros(1, 4)
BEHAVIOUR = -torch.tensor([[math.log(3), math.log(0.25), math.log(1.5), 5.0]])
MASK = torch.tensor([[1.0, 1.0, 1.0, 0.0]])


def test_token_truncated_is():
    weights, metrics = rollout_correction(OLD, BEHAVIOUR, MASK, "token", cap=2.0)
    # min(ρ, 2) = (2, 0.25, 1.5), padding 0
    assert_close(weights, torch.tensor([[2.0, 0.25, 1.5, 0.0]]))
    assert metrics["truncated_frac"].item() == pytest.approx(1 / 3)
    assert metrics["weight/mean"].item() == pytest.approx(3.75 / 3)
    # k3 of KL(μ‖π_old), ρ − 1 − ln ρ: 3 → 0.901388, 0.25 → 0.636294, 1.5 → 0.094535
    assert metrics["mismatch_kl"].item() == pytest.approx((0.901388 + 0.636294 + 0.094535) / 3, abs=1e-5)


def test_sequence_truncated_is():
    # row 0: Σ log ρ = ln(3 · 0.25 · 1.5) = ln 1.125 → 1.125 on valid tokens
    # row 1: Σ log ρ = ln 2 + ln 2 + 0 = ln 4 → min(4, 2) = 2, every token truncated
    old = torch.cat([OLD, torch.zeros(1, 4)])
    behaviour = torch.cat([BEHAVIOUR, -torch.tensor([[math.log(2), math.log(2), 0.0, 0.0]])])
    mask = torch.cat([MASK, torch.tensor([[1.0, 1.0, 1.0, 0.0]])])
    weights, metrics = rollout_correction(old, behaviour, mask, "sequence", cap=2.0)
    assert_close(weights, torch.tensor([[1.125, 1.125, 1.125, 0.0], [2.0, 2.0, 2.0, 0.0]]))
    assert metrics["truncated_frac"].item() == pytest.approx(3 / 6)


def test_mask_mode_and_none():
    # keep ρ in [0.5, 2]: 3 → 0, 0.25 → 0, 1.5 → 1
    weights, metrics = rollout_correction(OLD, BEHAVIOUR, MASK, "mask", cap=2.0)
    assert_close(weights, torch.tensor([[0.0, 0.0, 1.0, 0.0]]))
    assert metrics["masked_frac"].item() == pytest.approx(2 / 3)
    weights, metrics = rollout_correction(OLD, BEHAVIOUR, MASK, "none", cap=2.0)
    assert_close(weights, MASK)
    assert metrics["mismatch_kl"].item() > 0


def test_rollout_weights_are_detached_and_modes_checked():
    old = OLD.clone().requires_grad_(True)
    weights, _ = rollout_correction(old, BEHAVIOUR, MASK, "token")
    assert not weights.requires_grad
    with pytest.raises(UnknownNameError, match="icepop, icepop_sequence, mask, none, sequence, token"):
        rollout_correction(OLD, BEHAVIOUR, MASK, "tis")
    with pytest.raises(ValueError, match="cap must be > 1"):
        rollout_correction(OLD, BEHAVIOUR, MASK, "token", cap=1.0)


def test_overlong_penalty():
    # L_max = 20, L_cache = 4 → free up to 16; 17 → −1/4, 18 → −2/4, 20 → −1, 25 → −1
    lengths = torch.tensor([10, 16, 17, 18, 20, 25])
    assert_close(
        overlong_penalty(lengths, max_tokens=20, buffer_len=4, penalty_factor=1.0),
        torch.tensor([0.0, 0.0, -0.25, -0.5, -1.0, -1.0]),
    )
    assert_close(
        overlong_penalty(lengths, 20, 4, penalty_factor=0.5), torch.tensor([0.0, 0.0, -0.125, -0.25, -0.5, -0.5])
    )
    with pytest.raises(ValueError, match="buffer_len"):
        overlong_penalty(lengths, max_tokens=4, buffer_len=8)


def test_groups_with_signal():
    # group 0 = [1, 1] (no signal), 1 = [0, 1], 2 = [2, 2], 3 = [5] (one sample: no signal)
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, 2.0, 2.0, 5.0])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3])
    assert groups_with_signal(rewards, groups).tolist() == [False, False, True, True, False, False, False]
