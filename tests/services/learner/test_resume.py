"""Checkpoint, stop and resume of the learner's loop on a real NATS server and a real tiny model.

The rollout side is `seeded_rollout`, a FAKE named as such: it answers each PromptTask
with responses drawn from `task.sampling.seed` (as seeded vLLM sampling does: the same
prompt, seed and weights give the same samples), scored by a synthetic rule. That makes an
uninterrupted run and a stopped-then-resumed run comparable step by step:

- the straight run trains 4 steps;
- the interrupted run is asked to stop (the SIGTERM path: `request_stop`) after step 2,
  writes a checkpoint and exits; a new process-like loop (new run id = fresh streams,
  new LearnerState, new model) resumes from the run dir and trains steps 2 and 3;
- steps 2 and 3 give the same loss, grad norm and reward as the straight run, every
  dataset draw is trained exactly once across the two halves, and the same draws as in
  the straight run.
"""
import asyncio
import uuid
from pathlib import Path

import numpy as np
import pytest

from meshrl.bus import Bus
from meshrl.bus.codec import pack_float32, pack_int32
from meshrl.checkpoint import list_checkpoints
from meshrl.checkpoint.errors import CheckpointError, IncompatibleCheckpointError
from meshrl.common.v1 import common_pb2
from meshrl.config import load_config
from meshrl.data.arithmetic import arithmetic_rows
from meshrl.data.load import write_rows
from meshrl.services.learner.assemble import online
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.ledger import read_ledger

TARGET = 7
COMPARED = ("loss", "grad_norm", "reward", "entropy", "lr")


def make_config(tmp_path: Path, model_dir, name: str, **overrides):
    data = tmp_path / "train.jsonl"
    if not data.exists():
        write_rows(data, arithmetic_rows(64, seed=0))
    return load_config(base={
        "run": {"name": name, "dir": str(tmp_path / name), "seed": 3},
        "model": {"path": str(model_dir)}, "data": {"train": str(data), "max_prompt_tokens": 128},
        "algorithm": {"preset": "grpo", "kl_coef": 0.0},
        "rollout": {"sampling": {"group_size": 4, "max_tokens": 6}},
        "learner": {"steps": 4, "prompts_per_step": 2, "checkpoint_every": 2},
        "trainer": {"micro_batch_size": 8, "optim": {"lr": 1e-3}},
    }, overrides=[f"{k}={v}" for k, v in overrides.items()])


async def seeded_rollout(bus):
    """FAKE rollout+reward: samples are a function of the task's seed; reward = share of TARGET."""
    async def answer(task: common_pb2.PromptTask, ctx):
        rng = np.random.default_rng(task.sampling.seed)
        group = common_pb2.Group(run_id=task.run_id, group_id=task.group_id, task=task,
                                 policy_version=task.min_policy_version,
                                 rollout_replica="seeded-0", scored=True)
        for i in range(task.sampling.n):
            ids = rng.integers(0, 16, size=task.sampling.max_tokens).astype(np.int32)
            group.samples.add(index=i, response_token_ids=pack_int32(ids),
                              behaviour_logprobs=pack_float32(np.full(len(ids), -2.0)),
                              reward=float(np.mean(ids == TARGET)), policy_version=group.policy_version,
                              finish_reason=common_pb2.FINISH_REASON_LENGTH)
        await bus.publish("ready", group, msg_id=group.group_id)
    await bus.worker("prompts", "seeded", answer)


class StopAfter:
    """Logger wrapper: asks the loop to stop (as SIGTERM does) once step `n` is logged."""

    def __init__(self, inner, state: LearnerState, n: int):
        self.inner, self.state, self.n = inner, state, n

    def log(self, step, metrics):
        self.inner.log(step, metrics)
        if step == self.n:
            self.state.request_stop("test: SIGTERM")

    def close(self):
        self.inner.close()


async def run_once(cfg, nats_url, *, stop_after: int | None = None, resume: str | None = None):
    """One learner 'process': its own run id, bus, state and model; returns (loop, state)."""
    run_id = f"t{uuid.uuid4().hex[:12]}"
    Path(cfg.run.dir).mkdir(exist_ok=True)
    bus = await Bus.connect(nats_url, run_id, name="test")
    await bus.ensure_streams()
    rollout = asyncio.create_task(seeded_rollout(bus))
    try:
        state = LearnerState(run_id=run_id, total_steps=cfg.learner.steps)
        built = await online(cfg, bus, run_id, state, resume=resume)
        if stop_after is not None:
            built.loop.logger = StopAfter(built.loop.logger, state, stop_after)
        await asyncio.wait_for(built.loop.run(), timeout=180)
        built.loop.logger.close()
        built.ledger.close()
        return built.loop, state
    finally:
        rollout.cancel()
        await bus.close()


def metrics_rows(run_dir) -> dict[int, dict]:
    import json
    return {r["step"]: r for r in map(json.loads, (Path(run_dir) / "metrics.jsonl").read_text().splitlines())}


def trained_draws(run_dir) -> list[int]:
    ledger = read_ledger(Path(run_dir) / "groups.jsonl")
    draw_of = {e["group_id"]: e["draw"] for e in ledger if e["event"] == "published"}
    return sorted(draw_of[e["group_id"]] for e in ledger if e["event"] == "trained")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir, nats_url):
    """The straight run and the stopped + resumed run, once for the module's tests."""
    tmp = tmp_path_factory.mktemp("resume")
    loop = asyncio.new_event_loop()
    straight = make_config(tmp, tiny_model_dir, "straight")
    split = make_config(tmp, tiny_model_dir, "split")
    first = loop.run_until_complete(run_once(split, nats_url, stop_after=1))
    second = loop.run_until_complete(run_once(split, nats_url, resume=split.run.dir))
    whole = loop.run_until_complete(run_once(straight, nats_url))
    loop.close()
    return {"straight": straight, "split": split, "first": first, "second": second, "whole": whole, "tmp": tmp}


def test_stop_request_checkpoints_and_exits_after_the_step(runs):
    loop, state = runs["first"]
    assert state.stopping.is_set() and loop.step == 2
    steps = [c.step for c in list_checkpoints(runs["split"].run.dir)]
    assert 2 in steps and max(steps) == 4  # step_2 from the stop; the resumed half wrote step_4


def test_resumed_steps_match_the_uninterrupted_run(runs):
    straight, split = metrics_rows(runs["straight"].run.dir), metrics_rows(runs["split"].run.dir)
    assert sorted(split) == [0, 1, 2, 3] and sorted(straight) == [0, 1, 2, 3]
    for step in (2, 3):
        for key in COMPARED:
            assert split[step][key] == pytest.approx(straight[step][key], rel=1e-5, abs=1e-7), (step, key)
    assert split[2]["weights_version"] == straight[2]["weights_version"] == 3


def test_no_draw_is_trained_twice_or_skipped(runs):
    split_draws = trained_draws(runs["split"].run.dir)
    assert split_draws == sorted(set(split_draws)) and len(split_draws) == 8
    assert split_draws == trained_draws(runs["straight"].run.dir)
    loop, state = runs["second"]
    assert state.groups_trained == 8 and len(set(loop.trained_ids)) == 8


def test_resume_refuses_a_config_that_changes_the_algorithm(runs, tiny_model_dir, nats_url):
    other = make_config(runs["tmp"], tiny_model_dir, "split", **{"algorithm.preset": "rloo"})
    with pytest.raises(IncompatibleCheckpointError, match="algorithm.advantage_estimator"):
        asyncio.run(run_once(other, nats_url, resume=other.run.dir))


def test_resume_from_a_missing_checkpoint_is_a_clear_error(runs, tiny_model_dir, nats_url):
    cfg = make_config(runs["tmp"], tiny_model_dir, "empty")
    with pytest.raises(CheckpointError, match="checkpoint|run dir"):
        asyncio.run(run_once(cfg, nats_url, resume=str(runs["tmp"] / "nowhere")))
