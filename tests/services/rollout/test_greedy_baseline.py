"""A task asking for a greedy baseline (ReMax) gets one temperature-0 response beside its group.

Run: .venv/bin/python -m pytest tests/services/rollout/test_greedy_baseline.py -m slow
"""

import numpy as np
import pytest

from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from tests.fixtures.vllm import prompt_task

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


async def test_greedy_sample_equals_a_temperature_zero_generation(base_rollout_engine):
    engine = base_rollout_engine
    task = prompt_task(engine.tokenizer, "the greedy baseline", group_id="g-greedy", n=3, temperature=1.0, max_tokens=8)
    task.sampling.greedy_baseline = True
    group = await engine.generate_group(task)
    assert [s.index for s in group.samples] == [0, 1, 2]  # the greedy one is not among them
    assert group.HasField("greedy_sample") and group.greedy_sample.index == 3
    greedy_ids = unpack_int32(group.greedy_sample.response_token_ids)
    assert 1 <= len(greedy_ids) <= 8
    assert len(unpack_float32(group.greedy_sample.behaviour_logprobs)) == len(greedy_ids)
    # the same prompt decoded alone at temperature 0 (n 1): the very same tokens and text
    alone = prompt_task(engine.tokenizer, "the greedy baseline", group_id="g-t0", n=1, temperature=0.0, max_tokens=8)
    reference = (await engine.generate_group(alone)).samples[0]
    np.testing.assert_array_equal(greedy_ids, unpack_int32(reference.response_token_ids))
    assert group.greedy_sample.response_text == reference.response_text
    assert group.greedy_sample.finish_reason == reference.finish_reason


async def test_a_task_without_the_flag_has_no_greedy_sample(base_rollout_engine):
    engine = base_rollout_engine
    group = await engine.generate_group(prompt_task(engine.tokenizer, n=2, max_tokens=4))
    assert not group.HasField("greedy_sample") and len(group.samples) == 2
