"""The reference stage of the loop: `scored` → add reference log-probs → `ready`.

For every sample of a Group, `Sample.ref_logprobs` gets the frozen model's per-token
log-probs of its response (packed float32, one per response token), `has_ref_logprobs`
is set, a `reference` StageTiming is appended, and the group is published on `ready` with
the group id as message id (a redelivered group is deduplicated by JetStream). The bus acks
the `scored` message only after the handler returned, i.e. after the publish: a crash in
between redelivers, never loses. A group the rollout dropped (`Group.drop_reason`) is
passed on without log-probs: the learner records it as dropped. `on_group(group)` is
called after each publish: `reference_instruments(metrics)` counts groups and sequences,
a callback (default: nothing) so tests that build a worker directly need no metrics
endpoint. No torch here (the scorer is passed in), so the service's main imports this
module at its top.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Callable

from meshrl import topology
from meshrl.api.common.v1 import common_pb2
from meshrl.telemetry.tracing import group_span, inject_headers
from meshrl.transport.bus.codec import pack_float32, unpack_int32

if TYPE_CHECKING:
    from meshrl.services.reference.scorer import ReferenceScorer

KIND = "reference"  # its durable is named after it (topology)
STAGE, DURABLE, OUT_STAGE = topology.consumed_stage(KIND), KIND, topology.output_stage(KIND)
GroupCallback = Callable[[common_pb2.Group], None]


def no_op(group: common_pb2.Group) -> None:
    """What a worker calls when metrics are off."""


def reference_instruments(handle) -> GroupCallback:
    """Counters of groups and sequences (samples) given reference log-probs."""
    if handle is None:
        return no_op
    groups = handle.counter("meshrl_groups_scored_total", "groups given reference log-probs")
    sequences = handle.counter("meshrl_sequences_scored_total", "sequences scored")

    def on_group(group: common_pb2.Group) -> None:
        groups.add(1)
        sequences.add(len(group.samples))

    return on_group


def add_ref_logprobs(scorer: ReferenceScorer, group: common_pb2.Group, replica_id: str) -> common_pb2.Group:
    """Fill ref log-probs of every sample in place and record the timing; return the group."""
    start = time.time()
    prompt = unpack_int32(group.task.prompt_token_ids)
    responses = [unpack_int32(s.response_token_ids) for s in group.samples]
    logprobs = scorer.score([prompt] * len(responses), responses)
    for sample, values in zip(group.samples, logprobs):
        sample.ref_logprobs = pack_float32(values)
    group.has_ref_logprobs = True
    group.timings.add(stage="reference", service=replica_id, start_unix=start, end_unix=time.time())
    return group


class ReferenceWorker:
    """The NATS handler: score in a thread (the event loop keeps heartbeats going), publish."""

    def __init__(self, bus, scorer: ReferenceScorer, replica_id: str, on_group=no_op):
        self.bus, self.scorer, self.replica_id, self.on_group = bus, scorer, replica_id, on_group
        self.groups_done = 0

    async def handle(self, group: common_pb2.Group, ctx=None) -> None:
        with group_span(
            "reference.logprobs",
            group.group_id,
            headers=ctx.headers if ctx else None,
            policy_version=group.policy_version,
        ):
            if not group.drop_reason:  # the rollout gave up on it: passed on as it is
                await asyncio.to_thread(add_ref_logprobs, self.scorer, group, self.replica_id)
            await self.bus.publish(OUT_STAGE, group, msg_id=group.group_id, headers=inject_headers())
        self.groups_done += 1
        self.on_group(group)
