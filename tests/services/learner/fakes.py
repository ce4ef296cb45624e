"""Shared pieces of the learner's service tests: a FAKE seeded rollout (named as such), a
small run config on the tiny model, and `run_once` = one learner 'process' on a real NATS."""

import asyncio
import math
import uuid
from pathlib import Path

import numpy as np

from meshrl.api.common.v1 import common_pb2
from meshrl.config import load_config
from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from meshrl.services.learner.assemble import online
from meshrl.services.learner.control import LearnerState
from meshrl.transport.bus import Bus
from meshrl.transport.bus.codec import pack_float32, pack_int32
from meshrl.transport.bus.subjects import WEIGHTS_NOTICE_KEY

TARGET = 7


def make_config(tmp_path: Path, model_dir, name: str, **overrides):
    data = tmp_path / "train.jsonl"
    if not data.exists():
        write_rows(data, arithmetic_rows(64, seed=0))
    return load_config(
        base={
            "run": {"name": name, "dir": str(tmp_path / name), "seed": 3},
            "model": {"path": str(model_dir)},
            "data": {"train": str(data), "max_prompt_tokens": 128},
            "algorithm": {"preset": "grpo", "kl_coef": 0.0},
            "rollout": {"sampling": {"group_size": 4, "max_tokens": 6}},
            "learner": {"steps": 4, "prompts_per_step": 2, "checkpoint_every": 2},
            "trainer": {"micro_batch_size": 8, "optim": {"lr": 1e-3}},
        },
        overrides=[f"{k}={v}" for k, v in overrides.items()],
    )


async def seeded_rollout(
    bus, *, scoring_down=lambda: False, delay_s: float = 0.0, follow_weights: bool = False, drop=lambda task: ""
):
    """FAKE rollout+reward: samples are a function of the task's seed; reward = share of TARGET.
    While `scoring_down()` every reward is NaN (as the reward service marks a failed score).
    Groups carry the task's version, or with `follow_weights` the version of the run KV's
    newest weights notice (what a real replica holds once it has loaded it). A task for which
    `drop(task)` says a reason is answered as the rollout gives up on a group: that
    `Group.drop_reason` and no samples."""

    async def answer(task: common_pb2.PromptTask, ctx):
        await asyncio.sleep(delay_s)
        rng = np.random.default_rng(task.sampling.seed)
        version = await current_notice_version(bus) if follow_weights else task.min_policy_version
        group = common_pb2.Group(
            run_id=task.run_id,
            group_id=task.group_id,
            task=task,
            policy_version=version,
            drop_reason=drop(task),
            rollout_replica="seeded-0",
            scored=True,
        )
        for i in range(0 if group.drop_reason else task.sampling.n):
            ids = rng.integers(0, 16, size=task.sampling.max_tokens).astype(np.int32)
            group.samples.add(
                index=i,
                response_token_ids=pack_int32(ids),
                behaviour_logprobs=pack_float32(np.full(len(ids), -2.0)),
                reward=math.nan if scoring_down() else float(np.mean(ids == TARGET)),
                policy_version=group.policy_version,
                finish_reason=common_pb2.FINISH_REASON_LENGTH,
            )
        await bus.publish("ready", group, msg_id=group.group_id)

    await bus.worker("prompts", "rollout", answer)  # the run's durable on prompts (subjects.run_consumers)


async def current_notice_version(bus) -> int:
    entry = await bus.state.get(WEIGHTS_NOTICE_KEY)
    return entry.proto(common_pb2.WeightsNotice).version if entry is not None else 0


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


async def run_once(
    cfg,
    nats_url,
    *,
    stop_after: int | None = None,
    resume: str | None = None,
    during=None,
    rollout=seeded_rollout,
    before=None,
    on_built=None,
):
    """One learner 'process': its own run id, bus, state and model; returns (loop, state).
    `before(bus)` runs once the run's streams exist (e.g. to leave what a dead learner left);
    `during(bus, state)`, when given, runs beside the loop (e.g. to resume a paused run);
    `rollout(bus)` answers the prompts (default: `seeded_rollout`); `on_built(loop)` sees the
    loop before it runs (e.g. to add a Prometheus logger, as the service's main does)."""
    run_id = f"t{uuid.uuid4().hex[:12]}"
    Path(cfg.run.dir).mkdir(exist_ok=True)
    bus = await Bus.connect(nats_url, run_id, name="test")
    await bus.ensure_streams()
    if before is not None:
        await before(bus)
    rollout = asyncio.create_task(rollout(bus))
    try:
        state = LearnerState(run_id=run_id, total_steps=cfg.learner.steps)
        built = await online(cfg, bus, run_id, state, resume=resume)
        if stop_after is not None:
            built.loop.logger = StopAfter(built.loop.logger, state, stop_after)
        if on_built is not None:
            on_built(built.loop)
        side = asyncio.create_task(during(bus, state)) if during else None
        await asyncio.wait_for(built.loop.run(), timeout=180)
        if side is not None:
            await side
        built.close()  # as the learner does at exit: logs flushed, /dev/shm files removed
        return built.loop, state
    finally:
        rollout.cancel()
        await asyncio.gather(rollout, return_exceptions=True)  # stopped before the bus closes
        await bus.close()
