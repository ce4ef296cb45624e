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
from pathlib import Path

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.inputs.checkpoint import list_checkpoints
from meshrl.inputs.checkpoint.errors import CheckpointError, IncompatibleCheckpointError
from meshrl.services.learner.ledger import read_ledger
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from tests.services.learner.fakes import make_config, run_once, seeded_rollout

COMPARED = ("loss", "grad_norm", "reward", "entropy", "lr")


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


def test_a_corrupted_newest_checkpoint_falls_back_to_the_previous_good_one(runs, nats_url, caplog):
    """(Last in the module: it changes the split run.) Flip one byte of step_4's shard: the
    resume reports it, resumes from step_2, and trains steps 2 and 3 again."""
    import logging

    run_dir = Path(runs["split"].run.dir)
    shard = run_dir / "checkpoints" / "step_4" / "model" / "policy.safetensors"
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING):
        loop, state = asyncio.run(run_once(runs["split"], nats_url, resume=str(run_dir)))
    assert "skipping checkpoint step_4" in caplog.text and "checksum" in caplog.text.lower()
    assert loop.step == 4 and len(loop.trained_ids) == 8
    assert loop.trained_ids[:4] == runs["first"][0].trained_ids  # the 2 steps before step_2


def test_a_partial_first_save_does_not_block_the_resume(runs, tiny_model_dir, nats_url):
    """A learner killed while writing its first checkpoint leaves only `step_1.tmp-PID`: the
    resume (what the launcher's restart does) starts at step 0 in the same run dir."""
    cfg = make_config(runs["tmp"], tiny_model_dir, "killed-mid-save")
    partial = Path(cfg.run.dir) / "checkpoints" / "step_1.tmp-99999"
    partial.mkdir(parents=True)
    (partial / "state.json").write_text("{trunc")
    loop, _ = asyncio.run(run_once(cfg, nats_url, resume=cfg.run.dir))
    assert loop.step == cfg.learner.steps
    assert [c.step for c in list_checkpoints(cfg.run.dir) if c.status == "ok"][-1] == cfg.learner.steps


def test_a_learner_restarted_before_its_first_checkpoint_takes_the_rollouts_back_to_its_weights(
    runs, tiny_model_dir, nats_url
):
    """The dead learner had pushed v4 and never checkpointed; its successor starts from the
    base weights (version 0). It must publish them, or every group the replicas make with v4
    is newer than the learner and dropped as "future_version", for ever."""
    cfg = make_config(runs["tmp"], tiny_model_dir, "died-before-checkpoint", **{"learner.steps": 2})

    async def dead_learners_push(bus):
        await bus.state.put(WEIGHTS_NOTICE_KEY, common_pb2.WeightsNotice(run_id=bus.run_id, version=4, step=3))

    loop, _ = asyncio.run(
        run_once(
            cfg,
            nats_url,
            resume=cfg.run.dir,
            before=dead_learners_push,
            rollout=lambda bus: seeded_rollout(bus, follow_weights=True),
        )
    )
    assert loop.step == 2 and loop.gatherer.totals.get("future_version", 0) == 0
    assert loop.version == 2  # v0 republished at start, then one push per step
