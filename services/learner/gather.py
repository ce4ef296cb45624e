"""Gathering one step's worth of ready groups from `meshrl.<run>.ready`.

Each group is checked as it arrives: groups the rollout gave up on (`Group.drop_reason`,
e.g. an environment that failed: their reason is its code), stale, malformed, failed-score
and (with dynamic sampling) no-signal groups are dropped, acked, written to the ledger with
their reason and counted (`groups/dropped_<reason>`), and their place in the in-flight bound
is freed so the feeder samples a replacement. Kept groups are acked only after the step
that trains on them, so a learner that dies mid-step loses nothing. A group id seen
before (a redelivery) is acked and ignored: nothing is trained twice. After a restart in the
same run, a group the dead learner published is dropped as "orphaned": its draw goes out again.

A reward outage (every group failing scoring for `alerts.reward_outage.after_s`) throttles
the feeder to one probe prompt in flight and says so in the status; the first group scored
again lifts it; after `max_wait_s` the gather gives up with `ScoringUnavailable`, which the
loop turns into a checkpoint and a stop.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from meshrl.config import RunConfig
from meshrl.alerts.rules.outage import OutageClock
from meshrl.services.learner.groups import check_group, has_signal
from meshrl.services.learner.ledger import Ledger
from meshrl.telemetry.tracing import group_span


log = logging.getLogger("meshrl.learner")


class RolloutStalled(RuntimeError):
    """No ready group arrived for longer than the configured stall timeout."""


class ScoringUnavailable(RuntimeError):
    """Every group failed scoring for longer than `alerts.reward_outage.max_wait_s`."""


@dataclass
class StepGroups:
    groups: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)
    wait_s: float = 0.0

    async def ack(self) -> None:
        for msg in self.messages:
            await msg.ack()


class Gatherer:
    def __init__(self, bus, feeder, cfg: RunConfig, *, ledger: Ledger | None = None,
                 stall_timeout_s: float = 600.0, alerts=None, vocab_size: int | None = None):
        self.bus, self.feeder, self.cfg = bus, feeder, cfg
        self.vocab_size = vocab_size  # token ids at or above it mark a group malformed
        self.ledger = ledger or Ledger(None)
        self.alerts = alerts  # AlertEngine: told when groups arrive, polled while none do
        self.stall_timeout_s = stall_timeout_s
        self.seen: set[str] = set()
        self.totals: Counter = Counter()
        self.rollout_dropped = 0  # groups the rollout gave up on (Group.drop_reason), all reasons
        self.outage = OutageClock()

    async def _drop(self, msg, reason: str, step_groups: StepGroups, detail: str = "") -> None:
        await msg.ack()
        self.ledger.dropped(msg.message.group_id, reason, msg.message.policy_version, detail)
        step_groups.dropped[reason] += 1
        self.totals[reason] += 1
        self.feeder.settle([msg.message.group_id])

    async def _drop_orphan(self, msg) -> None:
        """A group a dead learner published (this one restarted in the same run): its draw
        went out again under a new id, so training it too would train the draw twice. It
        never held a place in this feeder's in-flight bound, so it frees none."""
        await msg.ack()
        self.ledger.dropped(msg.message.group_id, "orphaned", msg.message.policy_version)
        self.totals["orphaned"] += 1

    async def collect(self, needed: int, *, version: int) -> StepGroups:
        """Wait for `needed` usable groups; dynamic sampling tops up dropped ones."""
        out, t0, last = StepGroups(), time.perf_counter(), time.monotonic()
        budget = needed * self.cfg.algorithm.max_sampling_rounds
        while len(out.groups) < needed:
            msgs = await self.bus.pull("ready", durable="learner", max_msgs=needed - len(out.groups), timeout=1.0)
            self._tell_alerts(arrived=bool(msgs))
            if not msgs and time.monotonic() - last > self.stall_timeout_s:
                raise RolloutStalled(f"no ready group for {self.stall_timeout_s:.0f} s; "
                                     f"check the rollout/reward/reference logs")
            for msg in msgs:
                last = time.monotonic()
                await self._consider(msg, out, version=version, budget=budget)
            self._watch_outage()
        out.wait_s = time.perf_counter() - t0
        return out

    def _watch_outage(self) -> None:
        """Throttle the feeder to one probe while nothing scores; give up after max_wait_s."""
        limits, now = self.cfg.alerts.reward_outage, time.monotonic()
        down = self.outage.down_for(now)
        waiting = f"reward scoring: {self.outage.describe(now)}" if down >= limits.after_s else ""
        if waiting != "" and down >= limits.max_wait_s:
            raise ScoringUnavailable(f"{self.outage.describe(now)}; gave up after "
                                     f"alerts.reward_outage.max_wait_s={limits.max_wait_s:g} s")
        self.feeder.wait_for(waiting)

    def _scored(self, ok: bool) -> None:
        if ok:
            self.outage.scored()
        else:
            self.outage.failed(time.monotonic())
        if self.alerts is not None:
            self.alerts.progress("scored" if ok else "score_failed")

    def _tell_alerts(self, *, arrived: bool) -> None:
        if self.alerts is None:
            return
        if arrived:
            self.alerts.progress("groups")
        # The clock rules (stall, service down, reward outage) are judged here, also while
        # groups arrive: during a reward outage they do, one failed probe after another.
        self.alerts.poll()

    async def _consider(self, msg, out: StepGroups, *, version: int, budget: int) -> None:
        # The last hop of the group's trace: the learner receives it (kept or dropped).
        with group_span("learner.gather", msg.message.group_id, headers=msg.headers,
                        policy_version=msg.message.policy_version):
            await self._judge(msg, out, version=version, budget=budget)

    async def _judge(self, msg, out: StepGroups, *, version: int, budget: int) -> None:
        group = msg.message
        if group.group_id in self.seen:
            await msg.ack()  # a redelivery of a group already handled
            return
        self.seen.add(group.group_id)
        if self.feeder.after_restart and group.group_id not in self.feeder.outstanding:
            return await self._drop_orphan(msg)
        verdict = check_group(group, current_version=version, max_staleness=self.cfg.learner.max_staleness,
                              vocab_size=self.vocab_size, need_ref=self.cfg.reference_enabled)
        if verdict.detail:
            log.warning("group %s dropped (%s): %s", group.group_id, verdict.reason, verdict.detail)
        if verdict.reason != "stale" and not group.drop_reason:  # neither was scored
            self._scored(verdict.reason != "failed_reward")
        if not verdict.keep:
            self.rollout_dropped += bool(group.drop_reason)
            return await self._drop(msg, verdict.reason, out, verdict.detail)
        drawn = len(out.groups) + sum(out.dropped.values())
        if self.cfg.algorithm.dynamic_sampling and not has_signal(group) and drawn < budget:
            return await self._drop(msg, "no_signal", out)
        out.groups.append(group)
        out.messages.append(msg)
