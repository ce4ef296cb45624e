"""The learner service's loop on a real NATS server and a real tiny model.

The rollout side here is `scripted_rollout`, a fake named as such: it answers each
PromptTask on `prompts` with a group of random responses on `ready`, scored by a synthetic
rule. It stands in for rollout + reward so that the learner's own behaviour can be pinned:
batches gathered, stale groups dropped, weights pushed with a verifiable checksum, every
group id accounted for.
"""

import asyncio
from pathlib import Path

import numpy as np
import pytest
from blake3 import blake3

from meshrl.api.common.v1 import common_pb2
from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from meshrl.services.learner.assemble import online
from meshrl.services.learner.control import LearnerState
from meshrl.services.learner.ledger import read_ledger
from meshrl.services.learner.metric_logger import with_prometheus
from meshrl.telemetry.metrics import start_metrics
from meshrl.transport.bus.codec import pack_float32, pack_int32
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY
from meshrl.transport.weights import KEEP_VERSIONS
from tests.fixtures.prometheus import promtool_check, sample

TARGET = 7  # the synthetic reward: fraction of response tokens equal to this id


def make_config(tmp_path: Path, model_dir, **learner):
    data = write_rows(tmp_path / "train.jsonl", arithmetic_rows(64, seed=0))
    overrides = [f"learner.{k}={v}" for k, v in learner.items()]
    return load_config(
        base={
            "run": {"name": "t", "dir": str(tmp_path / "run")},
            "model": {"path": str(model_dir)},
            "data": {"train": str(data), "max_prompt_tokens": 128},
            "algorithm": {"preset": "grpo", "kl_coef": 0.0},
            "rollout": {"sampling": {"group_size": 4, "max_tokens": 6}},
            "learner": {"steps": 3, "prompts_per_step": 2},
            "trainer": {"micro_batch_size": 8, "optim": {"lr": 1e-3}},
        },
        overrides=overrides,
    )


async def scripted_rollout(bus, versions_served: list, *, stale_first: int = 0):
    """FAKE rollout+reward: random responses, reward = share of TARGET tokens."""
    rng = np.random.default_rng(0)
    served = 0

    async def answer(task: common_pb2.PromptTask, ctx):
        nonlocal served
        version = task.min_policy_version
        if version >= 1 and served < stale_first:
            version -= 1  # pretend a replica still on the previous version answered
            served += 1
        group = common_pb2.Group(
            run_id=task.run_id,
            group_id=task.group_id,
            task=task,
            policy_version=version,
            rollout_replica="scripted-0",
            scored=True,
        )
        for i in range(task.sampling.n):
            ids = rng.integers(0, 16, size=task.sampling.max_tokens).astype(np.int32)
            group.samples.add(
                index=i,
                response_token_ids=pack_int32(ids),
                behaviour_logprobs=pack_float32(np.full(len(ids), -2.0)),
                reward=float(np.mean(ids == TARGET)),
                policy_version=version,
                finish_reason=common_pb2.FINISH_REASON_LENGTH,
            )
        versions_served.append(version)
        await bus.publish("ready", group, msg_id=group.group_id)

    await bus.worker("prompts", "rollout", answer)


async def run_learner(cfg, bus, run_id, *, close: bool = True, metrics=None):
    state = LearnerState(run_id=run_id, total_steps=cfg.learner.steps)
    built = await online(cfg, bus, run_id, state)
    built.loop.logger = with_prometheus(built.loop.logger, metrics)  # as the service does (main.py)
    await built.loop.run()
    if close:
        built.close()
    return built, state


@pytest.fixture
def cfg(tmp_path, tiny_model_dir):
    (tmp_path / "run").mkdir()
    return make_config(tmp_path, tiny_model_dir)


async def test_learner_trains_pushes_and_accounts_for_every_group(cfg, bus, run_id):
    served = []
    rollout = asyncio.create_task(scripted_rollout(bus, served))
    try:
        with start_metrics("learner", "learner-0", run_id) as metrics:
            built, state = await asyncio.wait_for(
                run_learner(cfg, bus, run_id, close=False, metrics=metrics), timeout=120
            )
            text = metrics.scrape()
    finally:
        rollout.cancel()
    assert state.step == 3 and state.groups_trained == 6
    # The real step metrics on /metrics: the last step (2), names promtool accepts.
    assert sample(text, "meshrl_train_step", service="learner", run=run_id) == 2
    assert sample(text, "meshrl_train_step_phase_seconds", phase="step") > 0
    promtool_check(text)
    # Weights: one version per step, the notice's digest (shm: BLAKE3) is that of the bytes
    # written (in the background, finished before the learner's end)
    notice = (await bus.state.get(WEIGHTS_NOTICE_KEY)).proto(common_pb2.WeightsNotice)
    assert notice.version == 3 and notice.transport == "shm"
    data = Path(notice.location).read_bytes()
    assert len(data) == notice.size_bytes and blake3(data).hexdigest() == notice.blake3
    # Only the newest versions stay in /dev/shm, and none once the learner is done.
    shm = Path(notice.location).parent
    assert sorted(p.name for p in shm.iterdir()) == [f"weights-v{v}.safetensors" for v in range(4 - KEEP_VERSIONS, 4)]
    built.close()
    assert not shm.exists()
    # On-policy: each step's prompts asked for the version pushed by the step before.
    assert sorted(served)[:2] == [0, 0] and max(served) >= 2
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    assert len(trained) == len(set(trained)) == 6 and set(trained) <= published
    steps = {e["step"]: e["policy_version"] for e in ledger if e["event"] == "trained"}
    assert steps == {0: 0, 1: 1, 2: 2}  # synchronous: step n trains on version n
    rows = (Path(cfg.run.dir) / "metrics.jsonl").read_text().splitlines()
    assert len(rows) == 3 and '"reward"' in rows[0] and '"time/step"' in rows[0]


async def test_stale_groups_are_dropped_counted_and_replaced(cfg, bus, run_id):
    served = []
    rollout = asyncio.create_task(scripted_rollout(bus, served, stale_first=3))
    try:
        cfg.learner.steps = 2
        built, state = await asyncio.wait_for(run_learner(cfg, bus, run_id), timeout=120)
    finally:
        rollout.cancel()
    learner = built.loop
    assert state.groups_trained == 4
    ledger = read_ledger(Path(cfg.run.dir) / "groups.jsonl")
    dropped = [e for e in ledger if e["event"] == "dropped"]
    # After the first push, 3 answers came from version 0 while the learner held 1: with
    # max_staleness=0 each is dropped, counted, and replaced by a fresh prompt.
    assert [(e["reason"], e["policy_version"]) for e in dropped] == [("stale", 0)] * 3
    assert learner.gatherer.totals["stale"] == 3
    trained = [e for e in ledger if e["event"] == "trained"]
    assert {e["policy_version"] for e in trained if e["step"] == 1} == {1}
    published = [e for e in ledger if e["event"] == "published"]
    assert len(published) == 4 + 3


class FakeEvaluation:
    """FAKE held-out evaluation (stands in for rollout + reward): due at every step, it
    'evaluates' for half a second and counts the prompts published by its end."""

    def __init__(self, ledger_path: Path):
        self.ledger_path, self.published_by_end = ledger_path, []

    def published(self) -> int:
        events = read_ledger(self.ledger_path) if self.ledger_path.exists() else []
        return sum(1 for e in events if e["event"] == "published")

    def write_train(self, step, groups) -> None:
        pass

    def due(self, step: int) -> bool:
        return True

    async def maybe_run(self, step: int, version: int) -> dict[str, float]:
        await asyncio.sleep(0.5)
        self.published_by_end.append(self.published())
        return {"eval/accuracy": 0.0}

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("exclusive", [True, False], ids=["exclusive", "beside-training"])
async def test_an_exclusive_evaluation_holds_the_next_prompts_until_it_ends(
    tmp_path, tiny_model_dir, bus, run_id, exclusive
):
    (tmp_path / "run").mkdir()
    cfg = make_config(tmp_path, tiny_model_dir)
    cfg.eval.exclusive = exclusive
    rollout = asyncio.create_task(scripted_rollout(bus, []))
    try:
        built = await online(cfg, bus, run_id, LearnerState(run_id=run_id, total_steps=cfg.learner.steps))
        fake = built.loop.evaluation = FakeEvaluation(Path(cfg.run.dir) / "groups.jsonl")
        await asyncio.wait_for(built.loop.run(), timeout=120)
        built.close()
    finally:
        rollout.cancel()
    # the base model's evaluation, then one after each of the 3 steps of 2 prompts: exclusive,
    # only the prompts of steps already trained are out; beside training, the next step's too
    assert fake.published_by_end == ([0, 2, 4, 6] if exclusive else [2, 4, 6, 6])
