"""A group of a task with an environment: its N episodes at once, as one `Group`.

    rollout = AgentRollout(EpisodeContext(engine, env_client, chat_format, limits))
    group = await rollout.generate_group(task)   # task.environment != ""

All episodes run concurrently, and every turn is its own request on the shared engine, so
vLLM batches turns across the group's episodes and across groups (continuous batching: a
waiting episode never holds the engine up).

The group's prompt is the token prefix every episode's first prompt shares (all of it when
the environment's first answers agree, the usual case); `Group.task.prompt_token_ids`
becomes that rendered prompt (tools and first observation included), which is what the
learner and the reference read. Whatever an episode's first prompt has beyond it starts its
response, masked (0) like an observation. Each sample then holds:
  response_token_ids  every token after the prompt, model turns exactly as sampled
  loss_mask           uint8, 1 = the model's token, 0 = prompt rest or observation
  behaviour_logprobs  the sampling log-prob of each model token, 0 at mask 0
  turns               one `Turn` per model turn, spans relative to response_token_ids
  env_reward          the sum of the turns' rewards (has_env_reward when any gave one)
  response_text       the final turn's text (what rule rewards score; the episode is in `turns`)
  finish_reason       STOP when the environment said done, LENGTH when a limit ended it

When an episode fails (`EpisodeFailed`: the environment errored, timed out, lost the
episode, or answered against the contract) the others are cancelled and the group is
published with no samples and `drop_reason` naming the episode, the status and the message:
nothing half-finished is ever trained on. Every episode's Close is still attempted.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.agent.episode import Episode, EpisodeContext, Trajectory
from meshrl.services.rollout.agent.failures import EpisodeFailed
from meshrl.transport.bus.codec import pack_float32, pack_int32


def common_prefix(sequences: list[list[int]]) -> int:
    """Length of the longest prefix all `sequences` share."""
    shortest = min(map(len, sequences))
    for i in range(shortest):
        if any(s[i] != sequences[0][i] for s in sequences[1:]):
            return i
    return shortest


async def all_or_first_failure(tasks: list[asyncio.Task]) -> list:
    """The tasks' results in order; on the first exception the rest are cancelled (and
    awaited, so their Close calls run) and it is raised."""
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if task.exception() is not None:
                raise task.exception()
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def to_sample(index: int, traj: Trajectory, head: list[int], fallback_version: int) -> pb.Sample:
    """A sample whose response is `head` (the prompt's rest, masked) then the trajectory."""
    shift = len(head)
    turns = []
    for turn in traj.turns:
        moved = pb.Turn()
        moved.CopyFrom(turn)
        moved.token_start, moved.token_end, moved.observation_end = (
            turn.token_start + shift,
            turn.token_end + shift,
            turn.observation_end + shift,
        )
        turns.append(moved)
    finish = pb.FINISH_REASON_STOP if traj.ended == "done" else pb.FINISH_REASON_LENGTH
    return pb.Sample(
        index=index,
        response_token_ids=pack_int32(np.asarray(head + traj.ids, dtype=np.int32)),
        behaviour_logprobs=pack_float32(np.asarray([0.0] * shift + traj.logprobs, dtype=np.float32)),
        loss_mask=np.asarray([0] * shift + traj.mask, dtype=np.uint8).tobytes(),
        response_text=traj.turns[-1].text if traj.turns else "",
        finish_reason=finish,
        turns=turns,
        env_reward=traj.env_reward,
        has_env_reward=traj.has_env_reward,
        policy_version=min(traj.versions, default=fallback_version),
    )


class AgentRollout:
    def __init__(self, ctx: EpisodeContext, replicas=None, policy_server=None):
        self.ctx, self.replicas = ctx, replicas  # replicas: a KvReplicas to keep fresh, or None
        self.policy_server = policy_server  # the policy endpoint's aiohttp runner, or None
        self.groups_generated = self.groups_dropped = 0

    async def background(self) -> None:
        """Keep the environment's replica list fresh (a built-in's) until cancelled."""
        if self.replicas is None:
            await asyncio.Event().wait()
        await self.replicas.run()

    async def aclose(self) -> None:
        await self.ctx.env.aclose()
        if self.policy_server is not None:
            await self.policy_server.cleanup()

    async def generate_group(self, task: pb.PromptTask) -> pb.Group:
        start, version = time.time(), self.ctx.engine.version
        episodes = [Episode(self.ctx, task, i) for i in range(max(1, task.sampling.n))]
        try:
            trajectories = await all_or_first_failure([asyncio.create_task(e.run()) for e in episodes])
        except EpisodeFailed as failure:
            return self._dropped(task, failure.drop_reason, start, version, len(episodes))
        prompts = [t.prompt for t in trajectories]
        shared = common_prefix(prompts)
        if shared == 0:
            return self._dropped(
                task,
                "env_invalid_answer: the episodes' first prompts share no token (the "
                "environment's first answers differ from the first token on)",
                start,
                version,
                len(episodes),
            )
        samples = [to_sample(i, t, t.prompt[shared:], version) for i, t in enumerate(trajectories)]
        group = self._group(task, start, samples=samples, policy_version=min(s.policy_version for s in samples))
        group.task.prompt_token_ids = pack_int32(np.asarray(prompts[0][:shared], dtype=np.int32))
        self.groups_generated += 1
        self.ctx.events.finished(group, [t.ended for t in trajectories])
        return group

    def _dropped(self, task: pb.PromptTask, reason: str, start: float, version: int, episodes: int) -> pb.Group:
        self.groups_dropped += 1
        self.ctx.events.dropped(reason.partition(":")[0], episodes)
        return self._group(task, start, drop_reason=reason, policy_version=version)

    def _group(self, task: pb.PromptTask, start: float, **fields) -> pb.Group:
        timing = pb.StageTiming(
            stage="generate", service=self.ctx.engine.config.replica_id, start_unix=start, end_unix=time.time()
        )
        return pb.Group(
            run_id=task.run_id,
            group_id=task.group_id,
            task=task,
            rollout_replica=self.ctx.engine.config.replica_id,
            timings=[timing],
            **fields,
        )
