"""Every registered advantage estimator on multi-turn trajectories: masks with holes.

The batch is `tests/unit/algos/holes.py`: five episodes whose responses hold observation
tokens between the model's turns. For each estimator the expected advantages are computed
here by hand — plain Python over each row's model tokens only, as if the observations had
never been there — and the estimator must give exactly those on the model tokens, exactly
0 on observation and padding tokens, and the same result whatever values sit in the holes
(critic values, per-token rewards, log-probs there are garbage the estimator must not read).

`test_every_registered_estimator_is_covered` fails when a new estimator is registered
without a case here. The GAE case of verl's `test_multi_turn_compute_gae_advantage_return`
(observation tokens skipped, values in them random) is pinned with literal golden values.
"""

import math

import pytest
import torch
from torch.testing import assert_close

from meshrl.algos import get_advantage_estimator, list_advantage_estimators
from tests.unit.algos.holes import (
    COLUMNS,
    GROUP_ROWS,
    GROUPS,
    LENGTHS,
    MASK,
    REWARDS,
    SCORES,
    TOKEN_REWARDS,
    model_tokens,
    spread,
    spread_garbage,
)

EPS = 1e-6
VALUES = [[0.5, 0.2, -0.1], [0.3, 0.1, 0.0, 0.4, 0.2], [0.1, 0.1, 0.1], [1.0, 0.5], [0.6, 0.2, 0.3]]
OLD_LOGPROBS = [
    [-0.5, -1.0, -0.2],
    [-0.1, -2.0, -0.3, -0.7, -1.2],
    [-0.4, -0.4, -0.9],
    [-1.5, -0.05],
    [-0.6, -0.8, -0.25],
]
SUM_PI_SQUARED = [[0.5, 0.3, 0.8], [0.9, 0.2, 0.6, 0.4, 0.3], [0.5, 0.5, 0.4], [0.25, 0.95], [0.45, 0.35, 0.7]]
GREEDY = [0.5, 0.5, 0.5, 1.5, 1.5]  # ReMax: each group's greedy reward on its rows
COMPONENTS = [[1.0, 0.7], [0.0, 0.2], [1.0, 0.1], [1.0, 0.9], [0.0, 0.3]]
COMPONENT_WEIGHTS = [1.0, 0.5]
GAMMA, LAM = 0.5, 0.5


# ---- plain-Python helpers over lists ------------------------------------------------------
def mean(xs):
    return sum(xs) / len(xs)


def std(xs):  # Bessel-corrected, 0 for one value
    m = mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def group_of(row):
    return int(GROUPS[row])


def group_values(per_row, row):
    return [per_row[r] for r in GROUP_ROWS[group_of(row)]]


def repeat(per_row):
    """One value per row → that value on each of the row's model tokens."""
    return [[v] * n for v, n in zip(per_row, LENGTHS)]


def step_rewards(row):
    """The row's per-model-token rewards: its token rewards, plus the reward at its last."""
    r = list(TOKEN_REWARDS[row])
    r[-1] += float(REWARDS[row])
    return r


def returns_to_go(rewards, gamma=1.0):
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    return out[::-1]


def whiten(rows, eps):
    """(x − mean) / sqrt(var + eps) over every model token of the batch (var with n − 1)."""
    flat = [x for row in rows for x in row]
    m, var = mean(flat), std(flat) ** 2
    return [[(x - m) / math.sqrt(var + eps) for x in row] for row in rows]


def gae_row(rewards, values, gamma, lam):
    advantages, running, next_value = [], 0.0, 0.0
    for r, v in zip(reversed(rewards), reversed(values)):
        running = r + gamma * next_value - v + gamma * lam * running
        next_value = v
        advantages.append(running)
    return advantages[::-1]


# ---- the hand computation of each estimator: (advantages, returns or None) per row --------
def hand_grpo():
    return repeat(
        [(s - mean(group_values(SCORES, i))) / (std(group_values(SCORES, i)) + EPS) for i, s in enumerate(SCORES)]
    ), None


def hand_dr_grpo():
    return repeat([s - mean(group_values(SCORES, i)) for i, s in enumerate(SCORES)]), None


def hand_rloo():
    def others_mean(i):
        others = [SCORES[r] for r in GROUP_ROWS[group_of(i)] if r != i]
        return mean(others)

    return repeat([s - others_mean(i) for i, s in enumerate(SCORES)]), None


def hand_opo():
    """Baseline: the group's scores weighted by their MODEL-token counts (3, 5, 3 | 2, 3)."""

    def baseline(i):
        rows = GROUP_ROWS[group_of(i)]
        return sum(LENGTHS[r] * SCORES[r] for r in rows) / sum(LENGTHS[r] for r in rows)

    return repeat([s - baseline(i) for i, s in enumerate(SCORES)]), None


def hand_gpg():
    alpha = 5 / 5  # every group has signal: B / (B − M) = 1
    return repeat([alpha * (s - mean(group_values(SCORES, i))) for i, s in enumerate(SCORES)]), None


def hand_grpo_passk():
    per_row = []
    for i, s in enumerate(SCORES):
        group = sorted(group_values(SCORES, i), reverse=True)
        best = s == group[0]
        per_row.append((group[0] - group[1]) / (std(group) + EPS) if best else 0.0)
    return repeat(per_row), None


def hand_none():
    return repeat([0.0] * 5), repeat([0.0] * 5)


def hand_reinforce_plus_plus():
    returns = [returns_to_go(step_rewards(i), GAMMA) for i in range(5)]
    return whiten(returns, EPS), returns


def hand_reinforce_plus_plus_baseline():
    centred = [s - mean(group_values(SCORES, i)) for i, s in enumerate(SCORES)]
    return whiten(repeat(centred), EPS), None


def hand_remax():
    returns = [returns_to_go(step_rewards(i)) for i in range(5)]
    return [[g - GREEDY[i] for g in row] for i, row in enumerate(returns)], returns


def component_sums():
    summed = []
    for i in range(5):
        total = 0.0
        for k, weight in enumerate(COMPONENT_WEIGHTS):
            column = [COMPONENTS[r][k] for r in range(5)]
            group = group_values(column, i)
            total += weight * (column[i] - mean(group)) / (std(group) + EPS)
        summed.append(total)
    return summed


def hand_gdpo():
    return whiten(repeat(component_sums()), 1e-8), None


def hand_normalize_then_sum():
    """As gdpo's sum, then (x − mean) / (std + eps) over the five samples, not the tokens."""
    summed = component_sums()
    m, s = mean(summed), std(summed)
    return repeat([(x - m) / (s + EPS) for x in summed]), None


def path_weights():
    """W per model token: the cumulative Σ of 1 − 2π + Σπ² over the row's model tokens."""
    weights = []
    for i in range(5):
        per_token = [1 - 2 * math.exp(lp) + spq for lp, spq in zip(OLD_LOGPROBS[i], SUM_PI_SQUARED[i])]
        weights.append([sum(per_token[: k + 1]) for k in range(len(per_token))])
    return weights


def zero_tail_from(i):
    """handle_zero_tail: the second-longest token count of row i's group if row i alone is
    the longest, else None."""
    lengths = sorted(LENGTHS[r] for r in GROUP_ROWS[group_of(i)])
    return lengths[-2] if lengths[-1] > lengths[-2] and LENGTHS[i] == lengths[-1] else None


def hand_tir_optimal_token_baseline():
    """B_k over the group's rows that have a k-th model token, weighted by the cumulative
    path variance W; the longest row's tokens beyond the second-longest get B = 0."""
    returns, weights = [returns_to_go(step_rewards(i)) for i in range(5)], path_weights()
    advantages = []
    for i in range(5):
        rows, tail_from = GROUP_ROWS[group_of(i)], zero_tail_from(i)
        row = []
        for k, g in enumerate(returns[i]):
            peers = [r for r in rows if LENGTHS[r] > k]
            b = sum(returns[r][k] * weights[r][k] for r in peers) / (sum(weights[r][k] for r in peers) + 1e-8)
            row.append(g - (0.0 if tail_from is not None and k >= tail_from else b))
        advantages.append(row)
    return advantages, returns


def hand_optimal_token_baseline():
    """verl's column-by-column OTB: B at column c over the group's rows whose column c is a
    model token; the longest row's COLUMNS from the second-longest's token count on get B = 0
    (group 7: row 1's columns 3, 4, 5; group 9: row 4's column 3) — verl's own convention."""
    returns, weights = [returns_to_go(step_rewards(i)) for i in range(5)], path_weights()
    at = [dict(zip(COLUMNS[r], range(LENGTHS[r]))) for r in range(5)]  # column → k
    advantages = []
    for i in range(5):
        rows, tail_from = GROUP_ROWS[group_of(i)], zero_tail_from(i)
        row = []
        for c, k in at[i].items():
            peers = [r for r in rows if c in at[r]]
            b = sum(returns[r][at[r][c]] * weights[r][at[r][c]] for r in peers) / (
                sum(weights[r][at[r][c]] for r in peers) + 1e-8
            )
            row.append(returns[i][k] - (0.0 if tail_from is not None and c >= tail_from else b))
        advantages.append(row)
    return advantages, returns


def hand_gae():
    advantages = [gae_row(step_rewards(i), VALUES[i], GAMMA, LAM) for i in range(5)]
    returns = [[a + v for a, v in zip(advantages[i], VALUES[i])] for i in range(5)]
    return whiten(advantages, EPS), returns


HAND = {
    "grpo": hand_grpo,
    "dr_grpo": hand_dr_grpo,
    "rloo": hand_rloo,
    "opo": hand_opo,
    "gpg": hand_gpg,
    "grpo_passk": hand_grpo_passk,
    "none": hand_none,
    "reinforce_plus_plus": hand_reinforce_plus_plus,
    "reinforce_plus_plus_baseline": hand_reinforce_plus_plus_baseline,
    "remax": hand_remax,
    "gdpo": hand_gdpo,
    "normalize_then_sum": hand_normalize_then_sum,
    "optimal_token_baseline": hand_optimal_token_baseline,
    "tir_optimal_token_baseline": hand_tir_optimal_token_baseline,
    "gae": hand_gae,
}


def run(name: str, garbage: bool):
    """The registered estimator on the holey batch; garbage (or zeros) in holes and padding."""
    fill = (
        (lambda values, lo, hi: spread_garbage(values, lo, hi)) if garbage else (lambda values, lo, hi: spread(values))
    )
    return get_advantage_estimator(name)(
        rewards=REWARDS,
        response_mask=MASK,
        group_ids=GROUPS,
        values=fill(VALUES, -100.0, 100.0),
        token_rewards=fill(TOKEN_REWARDS, -5.0, 5.0),
        old_logprobs=fill(OLD_LOGPROBS, -8.0, 0.0),
        sum_pi_squared=fill(SUM_PI_SQUARED, 0.0, 1.0),
        greedy_rewards=torch.tensor(GREEDY),
        reward_components=torch.tensor(COMPONENTS),
        reward_component_weights=torch.tensor(COMPONENT_WEIGHTS),
        gamma=GAMMA,
        lam=LAM,
        eps=EPS,
        norm_by_std=True,
        scale_rewards="group",
    )


def test_every_registered_estimator_is_covered():
    assert sorted(HAND) == list_advantage_estimators()


@pytest.mark.parametrize("name", sorted(HAND))
def test_estimator_gives_the_hand_computed_advantages_on_model_tokens_only(name):
    result = run(name, garbage=True)
    expected_advantages, expected_returns = HAND[name]()
    for got, want in zip(model_tokens(result.advantages), expected_advantages):
        assert got == pytest.approx(want, abs=1e-5), name
    if expected_returns is not None:
        for got, want in zip(model_tokens(result.returns), expected_returns):
            assert got == pytest.approx(want, abs=1e-5), name
    holes = MASK == 0
    assert (result.advantages[holes] == 0).all() and (result.returns[holes] == 0).all()


@pytest.mark.parametrize("name", sorted(HAND))
def test_what_sits_in_the_holes_changes_nothing(name):
    with_garbage, with_zeros = run(name, garbage=True), run(name, garbage=False)
    assert torch.equal(with_garbage.advantages, with_zeros.advantages), name
    assert torch.equal(with_garbage.returns, with_zeros.returns), name


# ---- golden values: literal numbers, worked out once by hand -----------------------------
def test_grpo_golden_values():
    # group 7 scores 0.7, −0.4, 0.45: mean 0.25, std sqrt(0.3325) = 0.576628;
    # group 9 scores 1.6, 0.8: mean 1.2, std 0.565685
    result = get_advantage_estimator("grpo")(
        rewards=REWARDS,
        response_mask=MASK,
        group_ids=GROUPS,
        token_rewards=spread_garbage(TOKEN_REWARDS, -5.0, 5.0),
        eps=EPS,
    )
    expected = spread([[0.780399] * 3, [-1.127243] * 5, [0.346844] * 3, [0.707106] * 2, [-0.707106] * 3])
    assert_close(result.advantages, expected, atol=1e-5, rtol=0)


def test_opo_golden_values_count_model_tokens():
    # group 7 baseline (3·0.7 + 5·(−0.4) + 3·0.45) / 11 = 1.45 / 11; group 9 (2·1.6 + 3·0.8) / 5
    # = 1.12. Counting observation tokens too (5, 6, 3 | 6, 4) would give other numbers.
    result = get_advantage_estimator("opo")(
        rewards=REWARDS, response_mask=MASK, group_ids=GROUPS, token_rewards=spread_garbage(TOKEN_REWARDS, -5.0, 5.0)
    )
    b7 = 1.45 / 11
    expected = spread([[0.7 - b7] * 3, [-0.4 - b7] * 5, [0.45 - b7] * 3, [0.48] * 2, [-0.32] * 3])
    assert_close(result.advantages, expected, atol=1e-6, rtol=0)


def test_gae_skips_observation_tokens_verl_multi_turn_case():
    """verl's multi-turn GAE case: mask [0 0 1 1 1 0 0 1 1 0 0], rewards 0.1 per model token and
    1.0 at the last, values 4 5 6 7 9 at the model tokens and random elsewhere. With
    γ = λ = 0.5, over the model tokens only (V after the last = 0):
        δ = r + 0.5·V' − V:  −1.4, −1.9, −2.4, −2.4, −8.0
        A = δ + 0.25·A':     −2.09375, −2.775, −3.5, −4.4, −8.0
        returns = A + V:      1.90625, 2.225, 2.5, 2.6, 1.0"""
    mask = torch.tensor([[0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 0]], dtype=torch.float32)
    token_rewards = torch.tensor([[0.0, 0.0, 0.1, 0.1, 0.1, 0.0, 0.0, 0.1, 1.0, 0.0, 0.0]])
    gae = get_advantage_estimator("gae")
    runs = []
    for seed in range(3):  # the holes' values differ per run: -100..100 as verl's
        noise = torch.rand(1, 11, generator=torch.Generator().manual_seed(seed)) * 200 - 100
        values = torch.where(mask > 0, torch.tensor([[0, 0, 4.0, 5, 6, 0, 0, 7, 9, 0, 0]]), noise)
        runs.append(
            gae(
                rewards=torch.zeros(1),
                response_mask=mask,
                group_ids=torch.zeros(1, dtype=torch.int64),
                values=values,
                token_rewards=token_rewards,
                gamma=0.5,
                lam=0.5,
                whiten_advantages=False,
            )
        )
    at = [2, 3, 4, 7, 8]
    assert runs[0].advantages[0, at].tolist() == pytest.approx([-2.09375, -2.775, -3.5, -4.4, -8.0], abs=1e-6)
    assert runs[0].returns[0, at].tolist() == pytest.approx([1.90625, 2.225, 2.5, 2.6, 1.0], abs=1e-6)
    for other in runs[1:]:
        assert torch.equal(other.advantages, runs[0].advantages)
        assert torch.equal(other.returns, runs[0].returns)
    assert (runs[0].advantages[mask == 0] == 0).all()
