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
loop turns into a checkpoint and a stop. An environment outage (a group dropped
`env_unavailable` / `env_deadline_exceeded`, `alerts.env_outage`) throttles at once, to one
probe per `probe_every_s`, and each such group's prompt goes back to the draw (trained later,
same seed), so the outage costs its duration and no data; it gives up the same way
(`EnvironmentUnavailable`). Any other drop that does not pass by itself counts towards
`alerts.dropped_in_a_row.max_groups`: that many in a row with none kept and the gather gives
up with `GroupsKeepDropping`, naming the top reasons and how to fix them — else such a run
would republish prompts forever and never finish a step.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from meshrl import topology
from meshrl.alerts.rules.drop_streak import DropStreak
from meshrl.alerts.rules.env_outage import OUTAGE_CODES, environment_clock
from meshrl.alerts.rules.outage import OutageClock
from meshrl.config import RunConfig
from meshrl.services.learner.groups import check_group, has_signal
from meshrl.services.learner.ledger import Ledger
from meshrl.telemetry.tracing import group_span

log = logging.getLogger("meshrl.learner")


class RolloutStalled(RuntimeError):
    """No ready group arrived for longer than the configured stall timeout."""


class GatherGaveUp(RuntimeError):
    """No step can be gathered: the loop checkpoints (when it trained one) and stops, with
    this message."""


class ScoringUnavailable(GatherGaveUp):
    """Every group failed scoring for longer than `alerts.reward_outage.max_wait_s`."""


class EnvironmentUnavailable(GatherGaveUp):
    """Every group's environment was unreachable for longer than `alerts.env_outage.max_wait_s`."""


class GroupsKeepDropping(GatherGaveUp):
    """`alerts.dropped_in_a_row.max_groups` groups in a row dropped, none kept."""


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
    def __init__(
        self,
        bus,
        feeder,
        cfg: RunConfig,
        *,
        ledger: Ledger | None = None,
        stall_timeout_s: float = 600.0,
        alerts=None,
        vocab_size: int | None = None,
    ):
        self.bus, self.feeder, self.cfg = bus, feeder, cfg
        self.vocab_size = vocab_size  # token ids at or above it mark a group malformed
        self.ledger = ledger or Ledger(None)
        self.alerts = alerts  # AlertEngine: told when groups arrive, polled while none do
        self.stall_timeout_s = stall_timeout_s
        self.seen: set[str] = set()
        self.totals: Counter = Counter()
        self.rollout_dropped = 0  # groups the rollout gave up on (Group.drop_reason), all reasons
        self.outage = OutageClock()  # reward scoring
        self.env_outage = environment_clock()
        self.streak = DropStreak()  # groups dropped in a row (not counting outages, stale, ...)

    async def _drop(self, msg, reason: str, step_groups: StepGroups, detail: str = "") -> None:
        await msg.ack()
        self.streak.dropped(reason, detail)
        self._progress(f"dropped:{reason}")
        self.ledger.dropped(msg.message.group_id, reason, msg.message.policy_version, detail)
        step_groups.dropped[reason] += 1
        self.totals[reason] += 1
        # an environment that was not there says nothing about the prompt: it goes back to the draw
        self.feeder.settle([msg.message.group_id], give_back=reason in OUTAGE_CODES)

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
            msgs = await self.bus.pull(
                topology.consumed_stage("learner"), durable="learner", max_msgs=needed - len(out.groups), timeout=1.0
            )
            if not msgs and time.monotonic() - last > self.stall_timeout_s:
                raise RolloutStalled(
                    f"no ready group for {self.stall_timeout_s:.0f} s; check the rollout/reward/reference logs"
                )
            for msg in msgs:
                last = time.monotonic()
                await self._consider(msg, out, version=version, budget=budget)
            self._tell_alerts(arrived=bool(msgs))  # judged on what just arrived, before the gather may give up
            self._watch_limits()
        out.wait_s = time.perf_counter() - t0
        return out

    def _watch_limits(self) -> None:
        """Throttle the feeder to probes while nothing scores or no environment answers; give
        up after each outage's max_wait_s, or after too many groups dropped in a row."""
        now, waiting = time.monotonic(), []
        reward, env = self.cfg.alerts.reward_outage, self.cfg.alerts.env_outage
        outages = (  # (clock, limits, what, gave up, throttled after (s), probe every (s))
            (self.outage, reward, "reward scoring", ScoringUnavailable, reward.after_s, reward.after_s),
            (self.env_outage, env, "the environment", EnvironmentUnavailable, 0.0, env.probe_every_s),
        )
        for clock, limits, what, gave_up, throttle_after, probe_every in outages:
            down = clock.down_for(now)
            if down >= limits.max_wait_s:
                key = "reward_outage" if gave_up is ScoringUnavailable else "env_outage"
                raise gave_up(f"{clock.describe(now)}; gave up after alerts.{key}.max_wait_s={limits.max_wait_s:g} s")
            if clock.failing_since is not None and down >= throttle_after:
                waiting.append((f"{what}: {clock.describe(now)}", probe_every))
        limit = self.cfg.alerts.dropped_in_a_row.max_groups
        if self.streak.length >= limit:
            raise GroupsKeepDropping(self.streak.describe(limit))
        self.feeder.wait_for("; ".join(w for w, _ in waiting), every_s=min((s for _, s in waiting), default=None))

    def _progress(self, kind: str) -> None:
        if self.alerts is not None:
            self.alerts.progress(kind)

    def _scored(self, ok: bool, detail: str = "") -> None:
        if ok:
            self.outage.scored()
        else:
            self.outage.failed(time.monotonic(), detail)
        self._progress("scored" if ok else "score_failed")

    def _environment(self, group, reason: str) -> None:
        """A group the rollout finished: its environment answered; one dropped for an outage
        code: it did not. Other drops say nothing about the environment being there."""
        if not group.drop_reason:
            self.env_outage.scored()
            self._progress("env_answered")
        elif reason in OUTAGE_CODES:
            self.env_outage.failed(time.monotonic(), group.drop_reason)
            self._progress("env_failed")

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
        with group_span(
            "learner.gather", msg.message.group_id, headers=msg.headers, policy_version=msg.message.policy_version
        ):
            await self._judge(msg, out, version=version, budget=budget)

    def _verdict(self, group, version: int):
        """The group's checks (`check_group`), logged, and counted for the environment's and the
        reward's health whatever they say."""
        verdict = check_group(
            group,
            current_version=version,
            max_staleness=self.cfg.learner.max_staleness,
            vocab_size=self.vocab_size,
            need_ref=self.cfg.reference_enabled,
        )
        if verdict.detail:
            log.warning("group %s dropped (%s): %s", group.group_id, verdict.reason, verdict.detail)
        self._environment(group, verdict.reason)
        if verdict.reason != "stale" and not group.drop_reason:  # neither was scored
            self._scored(verdict.reason != "failed_reward", verdict.detail)
        return verdict

    async def _judge(self, msg, out: StepGroups, *, version: int, budget: int) -> None:
        group = msg.message
        if group.group_id in self.seen:
            await msg.ack()  # a redelivery of a group already handled
            return
        self.seen.add(group.group_id)
        if self.feeder.after_restart and group.group_id not in self.feeder.outstanding:
            return await self._drop_orphan(msg)
        verdict = self._verdict(group, version)
        if not verdict.keep:
            self.rollout_dropped += bool(group.drop_reason)
            return await self._drop(msg, verdict.reason, out, verdict.detail)
        drawn = len(out.groups) + sum(out.dropped.values())
        if self.cfg.algorithm.dynamic_sampling and not has_signal(group) and drawn < budget:
            return await self._drop(msg, "no_signal", out)
        self.streak.kept()
        self._progress("kept")
        self.feeder.arrived(group.group_id)
        out.groups.append(group)
        out.messages.append(msg)
