"""Every registered policy loss, KL estimator, loss aggregation and rollout-correction mode on
multi-turn trajectories (masks with holes, `tests/unit/algos/holes.py`), against values
computed here by hand over each row's model tokens only.

What must hold for each part: the hand-computed value on the model tokens; exactly 0 (and
zero gradient) on observation and padding tokens; the same result and metrics whatever
log-probs and advantages sit in the holes. The covariance losses are the sharpest case: the
holes hold garbage that would win their top-k / covariance band if it were counted.
`test_every_registered_part_is_covered` fails when a new part is registered without a case.
"""

import math

import numpy as np
import pytest
import torch

from meshrl.algos import (
    AGG_MODES,
    aggregate_loss,
    get_policy_loss,
    kl_estimate,
    list_kl_estimators,
    list_policy_losses,
    overlong_penalty,
)
from meshrl.algos.batch import RolloutBatch
from tests.unit.algos.holes import COLUMNS, LENGTHS, MASK, model_tokens, spread, spread_garbage

LOGPROBS = [[-0.4, -1.2, -0.1], [-0.3, -1.5, -0.2, -0.9, -1.0], [-0.6, -0.3, -0.8], [-1.0, -0.1], [-0.5, -1.1, -0.2]]
OLD = [[-0.5, -1.0, -0.2], [-0.1, -2.0, -0.3, -0.7, -1.2], [-0.4, -0.4, -0.9], [-1.5, -0.05], [-0.6, -0.8, -0.25]]
ADVANTAGES = [[1.0, 1.0, 1.0], [-0.5, -0.5, -2.0, -0.5, -0.5], [0.3, 0.3, 0.3], [2.0, -1.0], [-1.0, -1.0, -1.0]]
REF = [[-0.6, -1.1, -0.3], [-0.2, -1.7, -0.1, -1.0, -0.8], [-0.5, -0.5, -0.6], [-1.2, -0.2], [-0.4, -1.0, -0.4]]
TOKENS = sum(LENGTHS)  # 16 model tokens


def rows_of(*lists):
    """Per row, per model token: tuples of the lists' values."""
    return [list(zip(*(lst[r] for lst in lists))) for r in range(5)]


def sigmoid(x):
    return 1 / (1 + math.exp(-x))


def clip(x, low, high):
    return min(max(x, low), high)


# ---- policy losses by hand: per model token ----------------------------------------------
def hand_ppo():
    return [
        [max(-a * math.exp(lp - lo), -a * clip(math.exp(lp - lo), 0.8, 1.2)) for lp, lo, a in row]
        for row in rows_of(LOGPROBS, OLD, ADVANTAGES)
    ]


def hand_cispo():
    return [
        [-clip(math.exp(lp - lo), 0.8, 1.2) * a * lp for lp, lo, a in row] for row in rows_of(LOGPROBS, OLD, ADVANTAGES)
    ]


def hand_gpg():
    return [[-a * lp for lp, _, a in row] for row in rows_of(LOGPROBS, OLD, ADVANTAGES)]


def hand_dro():
    return [[-a * lp + 0.5 * (lp - lo) ** 2 for lp, lo, a in row] for row in rows_of(LOGPROBS, OLD, ADVANTAGES)]


def hand_sapo():
    def one(lp, lo, a):
        tau = 1.0 if a > 0 else 1.05
        return -sigmoid(tau * (math.exp(lp - lo) - 1)) * 4 / tau * a

    return [[one(*t) for t in row] for row in rows_of(LOGPROBS, OLD, ADVANTAGES)]


def dppo(valid):
    return [
        [-a * min(math.exp(lp - lo), 20.0) * lp * valid(lp, lo, a) for lp, lo, a in row]
        for row in rows_of(LOGPROBS, OLD, ADVANTAGES)
    ]


DPPO = dict(epsilon=0.05)  # tight enough that some model tokens leave the trust region


def hand_dppo_tv():
    def valid(lp, lo, a):
        shift = math.exp(lp) - math.exp(lo)
        return shift <= 0.05 if a > 0 else shift >= -0.05

    return dppo(valid)


def hand_dppo_kl():
    def valid(lp, lo, a):
        p, q = math.exp(lp), math.exp(lo)
        d = q * (lo - lp) + (1 - q) * math.log((1 - q + 1e-8) / (1 - p + 1e-8))
        return (d <= 0.05 or lp <= lo) if a > 0 else (d <= 0.05 or lp >= lo)

    return dppo(valid)


def hand_gspo():
    """s_i = exp(mean over the row's MODEL tokens of the log-ratio); clip 1 − 3e-4 .. 1 + 4e-4."""
    out = []
    for row in rows_of(LOGPROBS, OLD, ADVANTAGES):
        s = math.exp(sum(lp - lo for lp, lo, _ in row) / len(row))
        out.append([max(-a * s, -a * clip(s, 1 - 3e-4, 1 + 4e-4)) for _, _, a in row])
    return out


def hand_gmpo():
    out = []
    for row in rows_of(LOGPROBS, OLD, ADVANTAGES):

        def clipped(lp, lo, a):
            sign = (a > 0) - (a < 0)
            return sign * min(sign * (lp - lo), sign * clip(lp - lo, -0.4, 0.4))

        r = math.exp(sum(clipped(*t) for t in row) / len(row))
        mean_a = sum(a for _, _, a in row) / len(row)
        out.append([-mean_a * r] * len(row))
    return out


def covariances():
    """cov_t = (A_t − mean A)(log π_t − mean log π), means over the batch's 16 model tokens."""
    flat = [t for row in rows_of(LOGPROBS, ADVANTAGES) for t in row]
    mean_lp = sum(lp for lp, _ in flat) / TOKENS
    mean_a = sum(a for _, a in flat) / TOKENS
    return [[(a - mean_a) * (lp - mean_lp) for lp, a in row] for row in rows_of(LOGPROBS, ADVANTAGES)]


CLIP_COV = dict(clip_cov_ratio=1.0, clip_cov_lb=0.05, clip_cov_ub=5.0)


def hand_clip_cov():
    """PPO's loss, 0 on every model token the clip leaves alone whose cov is in (0.05, 5)
    (ratio 1.0: all such candidates are chosen, so no randomness is left)."""
    covs, ppo = covariances(), hand_ppo()
    out = []
    for r, row in enumerate(rows_of(LOGPROBS, OLD, ADVANTAGES)):
        line = []
        for t, (lp, lo, a) in enumerate(row):
            unclipped = -a * math.exp(lp - lo)
            candidate = 0.05 < covs[r][t] < 5.0 and not ppo[r][t] > unclipped
            line.append(0.0 if candidate else ppo[r][t])
        out.append(line)
    return out


KL_COV = dict(kl_cov_ratio=0.125, kl_cov_coef=1.0)  # int(0.125 · 16) = 2 tokens


def hand_kl_cov():
    """−Aρ everywhere, plus |log ρ| on the two model tokens of highest covariance."""
    covs = covariances()
    top = sorted(((c, r, t) for r, row in enumerate(covs) for t, c in enumerate(row)), reverse=True)[:2]
    chosen = {(r, t) for _, r, t in top}
    return [
        [-a * math.exp(lp - lo) + (abs(lp - lo) if (r, t) in chosen else 0.0) for t, (lp, lo, a) in enumerate(row)]
        for r, row in enumerate(rows_of(LOGPROBS, OLD, ADVANTAGES))
    ]


def hand_vespo():
    """TRL 1.16 `get_gamma_weights`: log w = Σ over the row's model tokens of the log-ratio
    (a product of ratios, not a mean), φ = exp(λ + k·log w − λ·w) with (k, λ) = (2, 3) where
    A ≥ 0 and (3, 2) where A < 0; loss −φ·A·log π."""

    def phi(log_w, a):
        k, lam = (2.0, 3.0) if a >= 0 else (3.0, 2.0)
        return math.exp(lam + k * log_w - lam * math.exp(log_w))

    out = []
    for row in rows_of(LOGPROBS, OLD, ADVANTAGES):
        log_w = min(max(sum(lp - lo for lp, lo, _ in row), math.log(1e-8)), 20.0)
        out.append([-phi(log_w, a) * a * lp for lp, _, a in row])
    return out


LOSSES = {
    "ppo": (hand_ppo, {}),
    "cispo": (hand_cispo, {}),
    "gpg": (hand_gpg, {}),
    "dro": (hand_dro, {}),
    "sapo": (hand_sapo, {}),
    "dppo_tv": (hand_dppo_tv, DPPO),
    "dppo_kl": (hand_dppo_kl, DPPO),
    "gspo": (hand_gspo, {}),
    "luspo": (hand_gspo, {}),
    "gmpo": (hand_gmpo, {}),
    "clip_cov": (hand_clip_cov, CLIP_COV),
    "kl_cov": (hand_kl_cov, KL_COV),
    "vespo": (hand_vespo, {}),
}


def run_loss(name: str, garbage: bool):
    """(result, ∂ Σ loss_mat / ∂ logprobs) with garbage (or zeros) in holes and padding."""
    fill = spread_garbage if garbage else (lambda values, lo, hi, seed=0: spread(values))
    logprobs = fill(LOGPROBS, -8.0, 0.0, seed=1).requires_grad_(True)
    torch.manual_seed(0)  # clip_cov draws its candidates' order
    result = get_policy_loss(name)(
        logprobs=logprobs,
        old_logprobs=fill(OLD, -8.0, 0.0, seed=2),
        advantages=fill(ADVANTAGES, -50.0, 50.0, seed=3),
        response_mask=MASK,
        **LOSSES[name][1],
    )
    result.loss_mat.sum().backward()
    return result, logprobs.grad


def test_every_registered_part_is_covered():
    assert sorted(LOSSES) == list_policy_losses()
    assert sorted(KL) == list_kl_estimators()
    assert sorted(AGGREGATES) == sorted(AGG_MODES)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_policy_loss_is_the_hand_computed_one_on_model_tokens_only(name):
    result, grad = run_loss(name, garbage=True)
    for got, want in zip(model_tokens(result.loss_mat), LOSSES[name][0]()):
        assert got == pytest.approx(want, abs=1e-5), name
    holes = MASK == 0
    assert (result.loss_mat[holes] == 0).all() and (grad[holes] == 0).all()
    assert grad[~holes].abs().sum() > 0  # the model tokens do get a gradient


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_what_sits_in_the_holes_changes_no_loss_gradient_or_metric(name):
    (with_garbage, grad_g), (with_zeros, grad_z) = run_loss(name, True), run_loss(name, False)
    assert torch.equal(with_garbage.loss_mat, with_zeros.loss_mat)
    assert torch.equal(grad_g, grad_z)
    assert with_garbage.metrics.keys() == with_zeros.metrics.keys()
    for key, value in with_garbage.metrics.items():
        assert torch.equal(value, with_zeros.metrics[key]), key


def test_ppo_metrics_count_model_tokens():
    result, _ = run_loss("ppo", garbage=True)
    ratios = [math.exp(lp - lo) for row in rows_of(LOGPROBS, OLD) for lp, lo in row]
    assert result.metrics["ratio/mean"].item() == pytest.approx(sum(ratios) / TOKENS, abs=1e-6)
    assert result.metrics["ratio/max"].item() == pytest.approx(max(ratios), abs=1e-6)
    high = sum(
        1
        for (lp, lo, a) in (t for row in rows_of(LOGPROBS, OLD, ADVANTAGES) for t in row)
        if math.exp(lp - lo) > 1.2 and a > 0
    )
    assert result.metrics["clip_ratio/high"].item() == pytest.approx(high / TOKENS)


# ---- KL estimators -----------------------------------------------------------------------
KL = {
    "k1": lambda x: x,
    "k2": lambda x: 0.5 * x * x,
    "mse": lambda x: 0.5 * x * x,
    "k3": lambda x: math.exp(-x) - 1 + x,
    "abs": abs,
    "k1+": lambda x: x,
    "k3+": lambda x: math.exp(-x) - 1 + x,
    "abs+": abs,
}


@pytest.mark.parametrize("kind", sorted(KL))
def test_kl_estimator_on_model_tokens_only(kind):
    logprobs = spread_garbage(LOGPROBS, -30.0, 0.0, seed=4).requires_grad_(True)
    ref = spread_garbage(REF, -30.0, 0.0, seed=5)  # |log-ratio| up to 30 in the holes
    kl = kl_estimate(logprobs, ref, kind, MASK)
    expected = [[KL[kind](lp - q) for lp, q in row] for row in rows_of(LOGPROBS, REF)]
    for got, want in zip(model_tokens(kl), expected):
        assert got == pytest.approx(want, abs=1e-6), kind
    kl.sum().backward()
    holes = MASK == 0
    assert (kl[holes] == 0).all() and (logprobs.grad[holes] == 0).all()
    assert torch.equal(kl, kl_estimate(spread(LOGPROBS), spread(REF), kind, MASK))
    if kind.endswith("+"):  # straight-through: k2's gradient l on the model tokens
        grads = [[lp - q for lp, q in row] for row in rows_of(LOGPROBS, REF)]
        for got, want in zip(model_tokens(logprobs.grad), grads):
            assert got == pytest.approx(want, abs=1e-6)


# ---- loss aggregation ----------------------------------------------------------------------
LOSS = [[1.0, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0, 1.0], [-1.0, 0.0, 2.0], [4.0, -2.0], [0.5, 0.5, 0.5]]
# row sums 6, 5, 1, 2, 1.5 (total 15.5) over 3, 5, 3, 2, 3 model tokens (16)
AGGREGATES = {
    "token-mean": 15.5 / 16,
    "seq-mean-token-sum": 15.5 / 5,
    "seq-mean-token-mean": (6 / 3 + 5 / 5 + 1 / 3 + 2 / 2 + 1.5 / 3) / 5,
    "seq-mean-token-sum-norm": 15.5 / (5 * 10),
    "token-sum": 15.5,
}


@pytest.mark.parametrize("mode", sorted(AGGREGATES))
def test_aggregation_counts_model_tokens_only(mode):
    loss_mat = spread_garbage(LOSS, -100.0, 100.0, seed=6).requires_grad_(True)
    value = aggregate_loss(loss_mat, MASK, mode, norm_len=10)
    assert value.item() == pytest.approx(AGGREGATES[mode], rel=1e-6)
    value.backward()
    assert (loss_mat.grad[MASK == 0] == 0).all()


# ---- lengths and DAPO's overlong shaping count the model's tokens ------------------------
def holey_batch() -> RolloutBatch:
    """The five episodes as a RolloutBatch, from per-row arrays as the learner decodes them."""
    real = [5, 6, 3, 6, 4]  # response tokens incl. observations (the mask's last 1 + 1)
    masks = [MASK[r, :n].numpy().astype(np.uint8) for r, n in enumerate(real)]
    responses = [np.arange(1, n + 1) for n in real]
    return RolloutBatch.from_sequences(
        [np.array([9, 9])] * 5,
        responses,
        rewards=np.zeros(5),
        group_ids=np.array([7, 7, 7, 9, 9]),
        pad_id=0,
        loss_masks=masks,
    )


def test_batch_keeps_attention_on_observations_and_loss_on_model_tokens():
    batch = holey_batch()
    assert torch.equal(batch.loss_mask, MASK)
    assert batch.response_mask.sum(dim=1).tolist() == [5, 6, 3, 6, 4]  # attended: everything real
    assert batch.response_lengths().tolist() == LENGTHS
    assert all(batch.loss_mask[r, c] == 1 for r, cols in enumerate(COLUMNS) for c in cols)


def test_overlong_shaping_counts_model_tokens():
    """L_max 5, buffer 2: no penalty up to 3 tokens, −1 at 5. The model wrote 3, 5, 3, 2, 3
    tokens; counting the observations too (5, 6, 3, 6, 4) would punish rows 0, 3 and 4."""
    penalty = overlong_penalty(holey_batch().response_lengths(), max_tokens=5, buffer_len=2)
    assert penalty.tolist() == [0.0, -1.0, 0.0, 0.0, 0.0]
