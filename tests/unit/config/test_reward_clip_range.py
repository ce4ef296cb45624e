"""algorithm.reward_clip_range: two finite numbers, low < high, or refused naming the key."""

import pytest

from meshrl.config import ConfigError
from meshrl.config.load import load_config

BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}


@pytest.mark.parametrize("value", ["[1,-1]", "[0.5,0.5]", "[0,.inf]", "[1]"])
def test_a_bad_clip_range_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match="reward_clip_range"):
        load_config(base=BASE, overrides=[f"algorithm.reward_clip_range={value}"])


def test_a_clip_range_loads():
    assert load_config(base=BASE, overrides=["algorithm.reward_clip_range=[-1,1]"]).algorithm.reward_clip_range == (
        -1.0,
        1.0,
    )
