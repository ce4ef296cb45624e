"""The NATS side: `generated` → score → `scored` (reference needed) or `ready`.

Consumes `meshrl.<run>.generated` with the durable `reward` (shared by all reward
replicas, so groups are spread across them), scores every sample of the group in one batch
per component (rules and external services concurrently), sets `group.scored`, appends a
`StageTiming("reward", replica)` and publishes with `msg_id = group_id` (JetStream drops a
redelivered duplicate). A group the rollout dropped (`Group.drop_reason`, e.g. its
environment failed) is passed on unscored, for the learner to record in its ledger. The bus acks only after the handler returns, i.e. after the
publish: a crash mid-group means a redelivery, never a lost group.

Where it goes: `scored` when `RunConfig.reference_enabled` (the reference adds log-probs
and forwards to `ready`), else straight to `ready`. `on_group(group)` is called after each
publish (metrics; see instruments.py). A component with `on_failure: stop` that fails sets
`stop_requested` (the service's work loop then exits 2: failure_policy.py).
"""

import asyncio
import logging
import math
import time

from meshrl import topology
from meshrl.api.common.v1 import common_pb2
from meshrl.services.reward.combine import failed_components
from meshrl.services.reward.failure_policy import StopRun
from meshrl.services.reward.instruments import no_op
from meshrl.services.reward.scorer import GroupScorer
from meshrl.telemetry.tracing import group_span, inject_headers

log = logging.getLogger(__name__)

KIND = "reward"  # its durable is named after it (topology)
IN_STAGE, DURABLE = topology.consumed_stage(KIND), KIND


def next_stage(reference_enabled: bool) -> str:
    return topology.output_stage(KIND, reference_enabled=reference_enabled)


class RewardWorker:
    def __init__(self, bus, scorer: GroupScorer, reference_enabled: bool, replica_id: str, on_group=no_op):
        self.bus, self.scorer, self.replica_id, self.on_group = bus, scorer, replica_id, on_group
        self.out_stage = next_stage(reference_enabled)
        self.groups_done = 0
        self.stop_run: StopRun | None = None  # set when a component with on_failure: stop failed
        self.stop_requested = asyncio.Event()

    async def handle(self, group: common_pb2.Group, ctx=None) -> None:
        with group_span(
            "reward.score", group.group_id, headers=ctx.headers if ctx else None, policy_version=group.policy_version
        ):
            start = time.time()
            try:
                if not group.drop_reason:  # the rollout gave up on it: passed on unscored
                    await self.scorer.score_group(group)
            except StopRun as err:  # nak'ed by the bus (raised on): a resumed run scores it again
                self.stop_run = self.stop_run or err
                self.stop_requested.set()
                raise
            group.timings.add(stage="reward", service=self.replica_id, start_unix=start, end_unix=time.time())
            self.warn_failures(group)
            await self.bus.publish(self.out_stage, group, msg_id=group.group_id, headers=inject_headers())
        self.groups_done += 1
        self.on_group(group)

    def warn_failures(self, group: common_pb2.Group) -> None:
        failed = [s for s in group.samples if math.isnan(s.reward)]
        if failed:
            log.warning(
                "group %s: %d/%d samples unscored (reward NaN): %s",
                group.group_id,
                len(failed),
                len(group.samples),
                "; ".join(failed_components(failed[0])),
            )
