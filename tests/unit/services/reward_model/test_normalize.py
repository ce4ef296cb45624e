"""RewardNormalizer: running mean/std (Welford, population variance) and clipping, checked
against hand-computed values."""

import math

import pytest

from meshrl.services.reward_model.normalize import RewardNormalizer


def test_running_mean_std_over_batches():
    norm = RewardNormalizer("running")
    # batch 1: mean 2, var 2/3 → ±1/sqrt(2/3) = ±1.2247
    assert norm([1.0, 2.0, 3.0]) == pytest.approx([-1.224744, 0.0, 1.224744], abs=1e-5)
    # batch 2 joins the stats: 1,2,3,4 → mean 2.5, var 1.25 → (4 - 2.5) / sqrt(1.25) = 1.341641
    assert norm([4.0]) == pytest.approx([1.341641], abs=1e-5)
    assert (norm.count, norm.mean) == (4, 2.5)


def test_clip_after_normalising_and_on_raw_scores():
    assert RewardNormalizer("running", clip=1.0)([1.0, 2.0, 3.0]) == pytest.approx([-1.0, 0.0, 1.0])
    assert RewardNormalizer("none", clip=2.0)([-5.0, 0.5, 7.0]) == [-2.0, 0.5, 2.0]
    assert RewardNormalizer()([3.0, -1.0]) == [3.0, -1.0]


def test_single_score_is_centred_not_nan():
    assert RewardNormalizer("running")([7.0]) == [0.0]
    assert not math.isnan(RewardNormalizer("running")([7.0, 7.0])[0])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "zscore"}, "normalize must be 'none' or 'running'"),
        ({"clip": 0.0}, "clip must be a positive number"),
    ],
)
def test_bad_settings_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RewardNormalizer(**kwargs)
