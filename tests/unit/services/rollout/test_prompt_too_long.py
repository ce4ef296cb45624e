"""A single-turn prompt whose answer cannot fit the engine's context is published as a dropped
group (prompt_too_long, naming both settings) instead of a request vLLM refuses on every
redelivery until the task is dead-lettered and the learner waits for it. The engine is built
without vLLM (object.__new__): the check runs before any request."""

import asyncio
from types import SimpleNamespace

import numpy as np

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.engine import RolloutEngine
from meshrl.transport.bus.codec import pack_int32


def engine(max_model_len: int) -> RolloutEngine:
    fake = object.__new__(RolloutEngine)  # no vLLM: the prompt is judged before any request
    fake.config, fake.version = SimpleNamespace(max_model_len=max_model_len, replica_id="rollout-0"), 4
    return fake


def task(prompt_tokens: int, max_tokens: int) -> pb.PromptTask:
    return pb.PromptTask(
        run_id="r", group_id="g-1", prompt_token_ids=pack_int32(np.arange(prompt_tokens)),
        sampling=pb.SamplingParams(n=4, max_tokens=max_tokens),
    )  # fmt: skip


def test_a_prompt_past_the_context_is_a_dropped_group_naming_the_fix():
    group = asyncio.run(engine(512).generate_group(task(559, 16)))
    assert group.group_id == "g-1" and not group.samples and group.policy_version == 4
    assert group.drop_reason.startswith("prompt_too_long: group g-1: a prompt of 559 tokens and an answer of up to 16")
    assert "rollout.max_model_len=512" in group.drop_reason and "data.max_prompt_tokens" in group.drop_reason


def test_a_prompt_that_fits_exactly_is_not_judged_too_long():
    assert engine(512)._prompt_too_long(task(496, 16), 496) == ""
    assert engine(512)._prompt_too_long(task(497, 16), 497).startswith("prompt_too_long")
