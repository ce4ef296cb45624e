"""The learner's evaluation hook on a real NATS run KV, real rollout and reward gRPC servers
(the session vLLM engine): when it evaluates, how it finds the services, what it writes to
samples.jsonl, and how it skips (with a warning) when the weights are not there in time.

Run: .venv/bin/python -m pytest tests/services/learner/test_evaluation_hook.py
"""

import json
import logging

import pytest

from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from meshrl.services.learner.evaluation import LearnerEval, NoEval, build_learner_eval
from meshrl.transport.bus.registry import announce_service
from tests.fixtures.eval_servers import eval_servers  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="session")]


def make_config(tmp_path, model_dir, **eval_keys):
    rows = write_rows(tmp_path / "eval.jsonl", arithmetic_rows(5, seed=1))
    return load_config(
        base={
            "run": {"name": "t", "dir": str(tmp_path / "run")},
            "model": {"path": str(model_dir)},
            "data": {"train": str(rows), "eval": str(rows)},
            "rollout": {"sampling": {"max_tokens": 4}},
            "reward": {
                "components": [
                    {"name": "em", "kind": "exact_match"},
                    {"name": "fmt", "kind": "regex", "params": {"pattern": "[aeiou]"}},
                ]
            },
            "learner": {"steps": 5},
            "eval": eval_keys,
        }
    )


def tokenizer_of(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_dir))


async def announce(bus, eval_servers):
    rollout_at, reward_at = eval_servers
    for i, address in enumerate(rollout_at):
        await announce_service(bus.state, "rollout", f"rollout-{i}", address)
    await announce_service(bus.state, "reward", "reward-0", reward_at)


async def test_evaluates_on_schedule_and_writes_eval_samples(bus, eval_servers, tiny_model_dir, tmp_path):
    cfg = make_config(tmp_path, tiny_model_dir, every=2, samples_per_step=3, wait_for_version_s=5)
    await announce(bus, eval_servers)
    hook = build_learner_eval(cfg, bus, tokenizer_of(tiny_model_dir), tmp_path / "run")
    assert isinstance(hook, LearnerEval)
    assert [hook.due(s) for s in range(6)] == [False, False, True, False, True, True]  # every 2, and the last
    assert await hook.maybe_run(1, 0) == {}
    metrics = await hook.maybe_run(2, 0)
    assert metrics["eval/n"] == 5 and 0.0 <= metrics["eval/accuracy"] <= 1.0
    assert metrics["eval/response_length_mean"] == pytest.approx(4.0, abs=4.0)
    rows = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(rows) == 3 and {(r["step"], r["split"], r["mode"]) for r in rows} == {(2, "eval", "greedy")}
    assert set(rows[0]["components"]) == {"em", "fmt"}
    await hook.close()


async def test_skips_with_a_warning_when_weights_never_arrive(bus, eval_servers, tiny_model_dir, tmp_path, caplog):
    cfg = make_config(tmp_path, tiny_model_dir, every=1, wait_for_version_s=0.5)
    await announce(bus, eval_servers)
    hook = build_learner_eval(cfg, bus, tokenizer_of(tiny_model_dir), tmp_path / "run")
    with caplog.at_level(logging.WARNING, logger="meshrl.learner.eval"):
        assert await hook.maybe_run(1, 1) == {}  # the engine holds version 0
    assert "step 1: evaluation skipped" in caplog.text and "older weights than version 1" in caplog.text


async def test_skips_when_no_rollout_is_announced(bus, tiny_model_dir, tmp_path, caplog):
    cfg = make_config(tmp_path, tiny_model_dir, every=1, wait_for_version_s=1.5)  # how long it waits for one
    hook = build_learner_eval(cfg, bus, tokenizer_of(tiny_model_dir), tmp_path / "run")
    with caplog.at_level(logging.WARNING, logger="meshrl.learner.eval"):
        assert await hook.maybe_run(1, 0) == {}
    assert "no rollout replica" in caplog.text


async def test_off_is_a_no_op_that_still_writes_train_samples(bus, tiny_model_dir, tmp_path):
    from meshrl.api.common.v1 import common_pb2 as pb

    cfg = make_config(tmp_path, tiny_model_dir, samples_per_step=1)
    hook = build_learner_eval(cfg, bus, tokenizer_of(tiny_model_dir), tmp_path / "run")
    assert isinstance(hook, NoEval) and not isinstance(hook, LearnerEval)
    assert await hook.maybe_run(5, 0) == {}
    group = pb.Group(
        group_id="g", task=pb.PromptTask(prompt_text="p"), samples=[pb.Sample(index=0, response_text="r", reward=1.0)]
    )
    hook.write_train(1, [group])
    (row,) = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert (row["split"], row["response"], row["reward"]) == ("train", "r", 1.0)
