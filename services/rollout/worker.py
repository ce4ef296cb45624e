"""The NATS side of a rollout replica: `prompts` → generate a group → `generated`.

Every replica binds to the one durable `rollout` on `meshrl.<run>.prompts`, so the server
spreads tasks over replicas and each task goes to exactly one. For each `PromptTask`:

1. wait until the engine holds at least `task.min_policy_version` (a task is never served
   with older weights); if that version does not arrive within `version_wait_s`, raise
   `VersionBehind`, which the bus turns into a nak with backoff, so the task is redelivered
   (maybe to a replica that has the version) rather than served stale;
2. `engine.generate_group(task)` — the group and every sample carry the policy version that
   produced them and this replica's id (done by the engine);
3. publish it on `generated` with `msg_id = group_id` (JetStream drops a duplicate of a
   redelivered task), then return: the bus acks only after the handler returns.

A task with an environment (`task.environment`) is played as N episodes instead
(`agent/group.py`): the same publish, with `Group.drop_reason` set when an episode failed.

Long generations: the bus worker runs with `auto_in_progress=True`, calling `in_progress()`
every `ack_wait / 3` s while the handler runs, so a slow group is not redelivered.
Groups run concurrently (`concurrency`), which is what lets vLLM batch them.
`on_group(group)` is called after each publish (metrics; see instruments.py).
"""

from __future__ import annotations

import asyncio
import logging

from meshrl import topology
from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.rollout.instruments import no_op
from meshrl.telemetry.tracing import group_span, inject_headers

log = logging.getLogger(__name__)

KIND = "rollout"  # its durable is named after it (topology)
IN_STAGE, OUT_STAGE, DURABLE = topology.consumed_stage(KIND), topology.output_stage(KIND), KIND
VERSION_POLL_S = 0.05


class VersionBehind(RuntimeError):
    """The task needs a newer policy version than this replica holds."""


class NoEnvironment(RuntimeError):
    """A task names an environment, but this replica's run config has none."""


async def generate_group(engine, agent, task: pb.PromptTask) -> pb.Group:
    """A single-turn group from the engine, or N episodes when the task names an environment
    (`agent`, an AgentRollout; the NATS worker and the gRPC Generate both come here)."""
    if not task.environment:
        return await engine.generate_group(task)
    if agent is None:
        raise NoEnvironment(
            f"group {task.group_id!r} is a task of environment {task.environment!r}, but "
            f"replica {engine.config.replica_id} has no `environment` section in its "
            f"run config: start it with the run's config"
        )
    return await agent.generate_group(task)


class RolloutWorker:
    def __init__(self, bus, engine, *, version_wait_s: float = 30.0, on_group=no_op, agent=None):
        self.bus, self.engine, self.version_wait_s = bus, engine, version_wait_s
        self.on_group, self.agent = on_group, agent  # agent: an AgentRollout, or None (single-turn only)
        self.consumer = None  # the bus Worker while running; `.counts` = acked/retried/dead

    async def handle(self, task: pb.PromptTask, ctx=None) -> None:
        await self.wait_for_version(task.min_policy_version, task.group_id)
        with group_span(
            "rollout.generate", task.group_id, headers=ctx.headers if ctx else None, policy_version=self.engine.version
        ):
            group = await self.generate(task)
            await self.bus.publish(OUT_STAGE, group, msg_id=group.group_id, headers=inject_headers())
        self.on_group(group)

    async def generate(self, task: pb.PromptTask) -> pb.Group:
        return await generate_group(self.engine, self.agent, task)

    async def wait_for_version(self, needed: int, group_id: str = "") -> None:
        """Return once the engine holds version `needed` or newer; VersionBehind on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.version_wait_s
        while self.engine.version < needed:
            if loop.time() >= deadline:
                raise VersionBehind(
                    f"group {group_id!r} needs policy version >= {needed}, replica "
                    f"{self.engine.config.replica_id} holds {self.engine.version} after waiting "
                    f"{self.version_wait_s:g} s; it is handed back to the queue"
                )
            await asyncio.sleep(VERSION_POLL_S)

    async def run(
        self, *, concurrency: int = 16, ack_wait: float = 120.0, max_deliver: int = 10, backoff=(2.0, 5.0, 10.0)
    ) -> None:
        """Consume `prompts` until cancelled (in-flight tasks are nak'ed for another replica)."""
        self.consumer = self.bus.make_worker(
            IN_STAGE,
            DURABLE,
            self.handle,
            batch=concurrency,
            concurrency=concurrency,
            ack_wait=ack_wait,
            max_deliver=max_deliver,
            backoff=backoff,
            auto_in_progress=True,
        )
        await self.consumer.run()
