"""pass@k (Chen et al. 2021) against values computed by hand from 1 − C(n−c, k) / C(n, k)."""

import pytest

from meshrl.eval.passk import mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (5, 2, 1, 1 - 3 / 5),  # C(3,1)/C(5,1): pass@1 is the fraction correct
        (5, 2, 2, 1 - 3 / 10),  # C(3,2)=3, C(5,2)=10
        (10, 3, 5, 1 - 21 / 252),  # C(7,5)=21, C(10,5)=252
        (4, 1, 4, 1.0),  # every draw of 4 from 4 holds the correct one
        (4, 0, 2, 0.0),
        (1, 1, 1, 1.0),
    ],
)
def test_pass_at_k_matches_hand_computed(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_mean_over_prompts():
    assert mean_pass_at_k([(5, 2), (4, 0)], 2) == pytest.approx((0.7 + 0.0) / 2)


def test_large_n_does_not_overflow():
    assert pass_at_k(2000, 1, 1000) == pytest.approx(0.5)  # C(1999,1000)/C(2000,1000) = 1000/2000


@pytest.mark.parametrize("n, c, k, words", [(3, 1, 4, "1 ≤ k ≤ n"), (3, 4, 1, "within 0..n")])
def test_bad_counts_are_refused(n, c, k, words):
    with pytest.raises(ValueError, match=words):
        pass_at_k(n, c, k)
