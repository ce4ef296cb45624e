"""TRL 1.16.0's DPO variants, numbers worked by hand: the f-divergences (forward KL, the α
convention, IPO and sigmoid_norm under them), the `sft` term, LD-DPO's weighted sums and WPO's
pair weights on masks with holes, and the config's refusals."""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import dpo_loss
from meshrl.algos.preference_weighting import ld_weighted_sums, wpo_pair_weights
from meshrl.config.algorithm import AlgorithmConfig
from tests.unit.algos.test_algos_preference import LENGTHS, PAIRS, logsig

# PAIRS: log-ratios c = (1, 0), r = (−1, 1); lengths |y_w| = (2, 4), |y_l| = (1, 2); β = ½
C, R, NW, NL = (1.0, 0.0), (-1.0, 1.0), (2.0, 4.0), (1.0, 2.0)


def loss_of(kind, **kwargs):
    return dpo_loss(**PAIRS, beta=0.5, kind=kind, **LENGTHS, **kwargs)[0]


def trl_alpha_score(x, a):
    """TRL 1.16.0's alpha_divergence score with its coefficient a: (e^((a−1)x) − 1)/(a − 1)."""
    return (math.exp((a - 1) * x) - 1) / (a - 1)


@pytest.mark.parametrize(
    "kind, options, expected",
    [
        # forward KL: h = e^−r − e^−c = (e − 1/e, 1/e − 1)
        (
            "sigmoid",
            {"f_divergence": "forward_kl"},
            [-logsig(0.5 * (math.e - 1 / math.e)), -logsig(0.5 * (1 / math.e - 1))],
        ),
        # the default α = ½: h = 2(e^(−r/2) − e^(−c/2))
        (
            "hinge",
            {"f_divergence": "alpha_divergence"},
            [max(0.0, 1 - 0.5 * 2 * (math.exp(0.5) - math.exp(-0.5))), max(0.0, 1 - 0.5 * 2 * (math.exp(-0.5) - 1))],
        ),
        # α = 0.7 is TRL's f_alpha_divergence_coef = 0.3
        (
            "sigmoid",
            {"f_divergence": "alpha_divergence", "f_alpha": 0.7},
            [-logsig(0.5 * (trl_alpha_score(c, 0.3) - trl_alpha_score(r, 0.3))) for c, r in zip(C, R)],
        ),
        # IPO under JS: s(x) = log 2 + log σ(x), h̄ = s(c)/|y_w| − s(r)/|y_l|, L = (h̄ − 1/(2β))²
        (
            "ipo",
            {"f_divergence": "js_divergence"},
            [
                ((math.log(2) + logsig(c)) / nw - (math.log(2) + logsig(r)) / nl - 1.0) ** 2
                for c, r, nw, nl in zip(C, R, NW, NL)
            ],
        ),
        # sigmoid_norm under forward KL: s(x) = 1 − e^−x
        (
            "sigmoid_norm",
            {"f_divergence": "forward_kl"},
            [-logsig(0.5 * ((1 - math.exp(-c)) / nw - (1 - math.exp(-r)) / nl)) for c, r, nw, nl in zip(C, R, NW, NL)],
        ),
    ],
)
def test_f_divergence_values(kind, options, expected):
    assert_close(loss_of(kind, options=options), torch.tensor(expected))


def test_sft_is_the_chosen_token_mean_nll_on_every_pair():
    # −(−1 − 2)/(2 + 4) = ½ on both pairs; its gradient −1/6 per chosen sum, none on the rest
    chosen = PAIRS["policy_chosen"].clone().requires_grad_(True)
    loss, _ = dpo_loss(**{**PAIRS, "policy_chosen": chosen}, beta=0.5, kind="sft", **LENGTHS)
    assert_close(loss, torch.tensor([0.5, 0.5]))
    loss.mean().backward()
    assert_close(chosen.grad, torch.tensor([-1 / 6, -1 / 6]))
    # RPO = sigmoid + α·sft; sft reads the plain (not LD-weighted) sums when given
    full = torch.tensor([-4.0, -5.0])
    rpo = loss_of(
        ["sigmoid", "sft"], weights=[1.0, 0.5], policy_chosen_full=full, options={"f_divergence": "js_divergence"}
    )
    assert_close(rpo, loss_of("sigmoid", options={"f_divergence": "js_divergence"}) + 0.5 * 9 / 6)


def test_pair_weights_multiply_every_term():
    weights = torch.tensor([0.5, 2.0])
    both = loss_of(["sigmoid", "hinge"], pair_weights=weights)
    assert_close(both, weights * (loss_of("sigmoid") + loss_of("hinge")))
    with pytest.raises(ValueError, match="cannot follow aot"):
        loss_of(["sigmoid", "aot"], pair_weights=weights)


def test_an_f_divergence_a_listed_loss_would_ignore_is_refused():
    with pytest.raises(ValueError, match="nca_pair has no f-divergence form"):
        loss_of(["sigmoid", "nca_pair"], options={"f_divergence": "forward_kl"})


# two pairs on masks with holes (multi-turn style); rows: chosen 0, chosen 1, rejected 0, rejected 1
MASK = torch.tensor(
    [
        [1, 1, 0, 1, 1, 0],  # |y_w0| = 4
        [1, 1, 1, 0, 0, 0],  # |y_w1| = 3
        [1, 0, 1, 0, 0, 0],  # |y_l0| = 2 → shared 2
        [1, 0, 1, 1, 1, 1],
    ],
    dtype=torch.float32,
)  # |y_l1| = 5 → shared 3
LOGPS = -torch.arange(1, 25, dtype=torch.float32).reshape(4, 6) / 10  # −0.1 … −2.4; holes too


def test_ld_sums_weight_the_tail_beyond_the_shared_length():
    got = ld_weighted_sums(LOGPS * MASK, MASK, alpha=0.25)
    expected = [
        -(0.1 + 0.2) - 0.25 * (0.4 + 0.5),  # shared: k = 1, 2; tail: k = 3, 4
        -(0.7 + 0.8 + 0.9),  # all 3 within the shared 3
        -(1.3 + 1.5),  # the shorter side: nothing beyond
        -(1.9 + 2.1 + 2.2) - 0.25 * (2.3 + 2.4),
    ]  # shared 3, tail the last 2
    assert_close(got, torch.tensor(expected))
    assert_close(ld_weighted_sums(LOGPS * MASK, MASK, alpha=1.0), (LOGPS * MASK).sum(-1))
    with pytest.raises(ValueError, match=r"dpo_ld_alpha must be in \[0, 1\]"):
        ld_weighted_sums(LOGPS, MASK, alpha=1.5)


def test_wpo_weights_are_the_aligned_mean_probability_of_both_sides():
    sum_sq = torch.full((4, 6), 0.5)  # log Σπ² = log ½ everywhere, holes included
    logps = (LOGPS * MASK).requires_grad_(True)
    got = wpo_pair_weights(logps, sum_sq, MASK)
    mean = [
        (-(0.1 + 0.2 + 0.4 + 0.5)) / 4,
        -(0.7 + 0.8 + 0.9) / 3,
        -(1.3 + 1.5) / 2,
        -(1.9 + 2.1 + 2.2 + 2.3 + 2.4) / 5,
    ]
    w = [math.exp(m - math.log(0.5)) for m in mean]
    assert_close(got, torch.tensor([w[0] * w[2], w[1] * w[3]]))
    assert not got.requires_grad


@pytest.mark.parametrize(
    "algo, match",
    [
        ({"dpo_ld_alpha": 0.5}, "dpo_ld_alpha weights the offline DPO path"),
        ({"offline": True, "dpo_use_weighting": True, "policy_loss": "aot"}, "aot pairs sorted log-ratios"),
        (
            {
                "offline": True,
                "policy_loss": "dpo",
                "dpo_loss_type": ["sigmoid", "apo_zero"],
                "loss_options": {"f_divergence": "js_divergence"},
            },
            "apo_zero has no f-divergence form",
        ),
        ({"offline": True, "dpo_ld_alpha": -0.1}, "greater than or equal to 0"),
    ],
)
def test_config_refuses_what_would_be_ignored(algo, match):
    with pytest.raises(ValueError, match=match):
        AlgorithmConfig(**algo)


def test_config_takes_the_trl_keys_together():
    algo = AlgorithmConfig(
        offline=True,
        policy_loss="dpo",
        dpo_loss_type=["ipo", "sft"],
        dpo_loss_weights=[1.0, 0.2],
        dpo_ld_alpha=0.3,
        dpo_use_weighting=True,
        loss_options={"f_divergence": "alpha_divergence", "f_alpha": 0.7},
    )
    assert (algo.dpo_ld_alpha, algo.dpo_use_weighting) == (0.3, True)
