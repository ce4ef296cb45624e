"""Evaluator against two real RolloutService servers on the session vLLM engine and a real
RewardService (exact match + regex), with the expected numbers computed independently:
the greedy answers come from the engine directly, the rewards from `re` and string equality,
pass@k from math.comb.

Run: .venv/bin/python -m pytest tests/services/eval/test_evaluator.py
"""

import asyncio
import json
import math
import re

import numpy as np
import pytest

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.eval import EvalUnavailable
from meshrl.eval.evaluator import Evaluator
from meshrl.eval.plan import EvalPlan
from meshrl.eval.reward_client import RewardClient
from meshrl.eval.rollout_pool import RolloutPool
from meshrl.inputs.data.prompts import PromptDataset
from meshrl.transport.bus.codec import pack_int32
from tests.fixtures.eval_servers import VOWEL, eval_servers  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]
PROMPTS = ["one", "two plus two", "hello", "abc", "what is 3+4?", "zz"]
MAX_TOKENS = 8
MISS = "no such answer"


def write_eval_file(path, answers) -> str:
    with open(path, "w") as f:
        for prompt, answer in zip(PROMPTS, answers):
            f.write(
                json.dumps({"prompt": prompt, "reward_model": {"ground_truth": answer}, "data_source": "tiny"}) + "\n"
            )
    return str(path)


def tokenizer_of(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


async def greedy_directly(engine, dataset) -> list[pb.Sample]:
    """Each prompt's greedy answer from the engine itself (no gRPC, no Evaluator)."""
    tasks = [
        pb.PromptTask(
            group_id=f"direct-{i}",
            prompt_token_ids=pack_int32(item.prompt_ids),
            sampling=pb.SamplingParams(n=1, temperature=0.0, max_tokens=MAX_TOKENS),
        )
        for i, item in enumerate(dataset.items)
    ]
    groups = await asyncio.gather(*(engine.generate_group(t) for t in tasks))
    return [g.samples[0] for g in groups]


def normalized(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


@pytest.fixture
async def dataset_and_greedy(base_rollout_engine, tiny_model_dir, tmp_path):
    """Prompts whose ground truth is the greedy answer for even indices and MISS for odd ones."""
    tok = tokenizer_of(tiny_model_dir)
    draft = PromptDataset.from_file(write_eval_file(tmp_path / "draft.jsonl", ["x"] * len(PROMPTS)), tok)
    greedy = await greedy_directly(base_rollout_engine, draft)
    answers = [s.response_text if i % 2 == 0 else MISS for i, s in enumerate(greedy)]
    return PromptDataset.from_file(write_eval_file(tmp_path / "eval.jsonl", answers), tok), greedy


async def test_greedy_accuracy_reward_and_pass_at_k(eval_servers, dataset_and_greedy):
    (rollout_at, reward_at), (dataset, greedy) = eval_servers, dataset_and_greedy
    # correct = total reward em + fmt ≥ 1: the exact answer, or any vowel in the response
    plan = EvalPlan(
        max_tokens=MAX_TOKENS,
        pass_k=2,
        pass_n=4,
        correct_component=None,
        correct_threshold=1.0,
        component_names=("em", "fmt"),
        batch_size=2,
        timeout_s=120,
    )
    pool, reward = RolloutPool(rollout_at), RewardClient([reward_at], plan.component_names, "t")
    done = []
    try:
        result = await Evaluator(plan, pool, reward, "t").run(dataset.items, tag="s1", on_progress=done.append)
    finally:
        await pool.close()
        await reward.close()
    m = result.metrics
    texts = [s.response_text for s in greedy]
    assert [s.response for s in result.greedy()] == texts
    expected_reward = [float(i % 2 == 0) + bool(re.search(VOWEL, t)) for i, t in enumerate(texts)]
    assert m["eval/n"] == 6 and sum(done) == 6
    assert m["eval/accuracy"] == np.mean([r >= 1.0 for r in expected_reward])
    assert m["eval/reward_mean"] == pytest.approx(np.mean(expected_reward))
    assert m["eval/response_length_mean"] == pytest.approx(np.mean([len(s.response_token_ids) // 4 for s in greedy]))
    assert m["eval/score_errors"] == 0
    first = result.greedy()[0]
    assert first.components == {
        "em": {"value": 1.0, "status": "OK"},
        "fmt": {"value": float(bool(re.search(VOWEL, texts[0]))), "status": "OK"},
    }
    assert_pass_at_k(result)


def assert_pass_at_k(result) -> None:
    """pass@2 and the sampled accuracy from the sampled texts, with math.comb."""
    m = result.metrics
    sampled = [s for s in result.samples if s.mode == "sampled"]
    assert len(sampled) == 6 * 4
    by_prompt = [[s for s in sampled if s.prompt_index == i] for i in range(6)]
    counts = [
        sum(normalized(s.response) == normalized(s.ground_truth) or bool(re.search(VOWEL, s.response)) for s in group)
        for group in by_prompt
    ]
    expected = np.mean([1 - math.comb(4 - c, 2) / math.comb(4, 2) for c in counts])
    assert m["eval/pass@2"] == pytest.approx(expected)
    assert m["eval/sampled_accuracy"] == pytest.approx(np.mean(counts) / 4)


async def test_replies_from_older_weights_are_refused(eval_servers, dataset_and_greedy):
    (rollout_at, reward_at), (dataset, _) = eval_servers, dataset_and_greedy
    plan = EvalPlan(max_tokens=4, component_names=("em", "fmt"), timeout_s=60)
    pool, reward = RolloutPool(rollout_at), RewardClient([reward_at], plan.component_names)
    try:
        with pytest.raises(EvalUnavailable, match="older than the 1 to evaluate"):
            await Evaluator(plan, pool, reward).run(dataset.items[:1], min_version=1)
        assert await pool.versions() == {a: 0 for a in rollout_at}
    finally:
        await pool.close()
        await reward.close()
