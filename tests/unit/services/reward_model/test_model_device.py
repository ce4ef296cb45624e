"""The reward model scores with every tensor on its own device (tests.fixtures.device_trap):
the tokenizer's output is moved there, nothing is made on torch's default device."""

import pytest

from meshrl.services.reward_model.model import RewardModel
from tests.fixtures.device_trap import default_device_elsewhere
from tests.fixtures.tiny_reward_model import build_tiny_reward_model

TEXTS = ["what is 3+4 ? the answer is 7", "8", "maybe seven maybe 8 maybe"]


def test_scores_with_the_default_device_elsewhere(tmp_path):
    rm = RewardModel(build_tiny_reward_model(tmp_path / "rm"), device="cpu")
    expected = rm.score(TEXTS)
    with default_device_elsewhere():
        got = rm.score(TEXTS)
    assert got == pytest.approx(expected, abs=1e-6)
