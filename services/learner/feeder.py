"""Publishing prompt tasks with backpressure and a staleness bound.

Groups "in flight" are those published but not yet trained on (or dropped). The feeder
keeps at most `learner.in_flight_bound` of them, so:
- `max_staleness = 0` (default bound = prompts_per_step): the next step's prompts go out
  only after the current step trained and pushed, so every group is sampled by the exact
  weights it is trained against (synchronous on-policy);
- `max_staleness = k`: up to k steps of prompts are sampled while the learner trains;
  each task asks for the oldest weights the learner will still accept at the step expected
  to train it (version_ask.py: usually the version it holds now, since that step is k pushes
  away), and a group that arrives older than that anyway is dropped and counted.

Every prompt the run takes from the dataset is a numbered *draw*; its sampling seed is a
function of (`run.seed`, draw number), so a group's samples depend on the weights and the
prompt, not on which replica or which process produced it. That is what lets a resumed run
reproduce the uninterrupted one: `state_dict()` saves the dataset cursor, the draw counter
and the draws still in flight (published, not yet trained or dropped); after
`load_state_dict()` those are re-issued first, under new group ids, with their old seeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from meshrl import topology
from meshrl.api.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.config.parts import estimator_needs
from meshrl.config.sampling import rollout_sampling
from meshrl.inputs.data.task_fields import task_fields
from meshrl.services.learner.ledger import Ledger
from meshrl.services.learner.version_ask import min_policy_version
from meshrl.telemetry.tracing import inject_headers, start_root_group_span
from meshrl.transport.bus.codec import pack_int32


@dataclass
class FeederState:
    published: int = 0
    settled: int = 0  # trained on, or dropped
    paused: bool = False
    waiting_for: str = ""  # set during a reward outage: one probe prompt in flight, not the bound
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def in_flight(self) -> int:
        return self.published - self.settled


@dataclass(frozen=True)
class Draw:
    number: int  # the run's n-th prompt (0-based); fixes the sampling seed
    dataset_index: int


def sampling_seed(run_seed: int, draw: int) -> int:
    """A per-draw seed in [1, 2^31): 0 means "unseeded" in the proto, so it is never used."""
    return int(np.random.SeedSequence([run_seed, draw]).generate_state(1)[0] % (2**31 - 1)) + 1


class PromptFeeder:
    def __init__(self, bus, dataset, cfg: RunConfig, run_id: str, ledger: Ledger | None = None):
        self.bus, self.dataset, self.cfg, self.run_id = bus, dataset, cfg, run_id
        self.ledger = ledger or Ledger(None)
        self.state = FeederState()
        self.policy_version = 0
        self.next_draw = 0
        self.outstanding: dict[str, Draw] = {}  # group id -> draw, published and not settled
        self.kept: set[str] = set()  # arrived, kept, waiting for their step (not a probe's place)
        self.replay: deque[Draw] = deque()  # draws to re-issue first (after a resume)
        self.trained = 0  # groups trained on so far (this run, including before a resume)
        self.last_publish = 0.0  # time.monotonic() of the last publish
        self.probe_every_s = cfg.alerts.reward_outage.after_s  # during an outage (wait_for)
        # A learner restarted in the same run: groups of ids it did not publish are a dead
        # learner's, whose draws it issues again (see Gatherer).
        self.after_restart = False

    def settle(self, group_ids: list[str], *, trained: bool = False, give_back: bool = False) -> None:
        """Groups trained on or dropped free their place in the in-flight bound. `give_back`:
        their draws go back to the front of the draw, in draw order (a group dropped because its
        environment was unreachable: its prompt is trained later with the same seed)."""
        for group_id in group_ids:
            self.kept.discard(group_id)
            draw = self.outstanding.pop(group_id, None)
            if give_back and draw is not None:
                self.replay = deque(sorted([*self.replay, draw], key=lambda d: d.number))
        self.state.settled += len(group_ids)
        self.trained += len(group_ids) if trained else 0
        self.state.wake.set()

    def arrived(self, group_id: str) -> None:
        """A group arrived and was kept: it waits for its step, and during an outage it does not
        hold the probe's place (else a kept group beside a dropped one would block every probe)."""
        self.kept.add(group_id)
        self.state.wake.set()

    def wanted(self) -> int:
        """Groups to keep in flight: the bound, but never more than the run still trains on
        (so the last step leaves no prompts behind). During an outage: the kept groups waiting
        for their step, plus one probe when one is due."""
        still_needed = self.cfg.learner.steps * self.cfg.learner.prompts_per_step - self.trained
        bound = self.cfg.learner.in_flight_bound
        if self.state.waiting_for:
            bound = len(self.kept) + (1 if self.until_probe() == 0 else 0)
        return min(bound, still_needed)

    def until_probe(self) -> float:
        """During an outage one probe prompt goes out per the outage's `after_s`
        (`alerts.reward_outage` / `alerts.env_outage`): enough to see the service come back,
        little generation thrown away meanwhile."""
        return max(0.0, self.last_publish + self.probe_every_s - time.monotonic())

    def wait_for(self, what: str, every_s: float | None = None) -> None:
        """Throttle to one probe per `every_s` while `what` is unavailable ("" lifts it)."""
        self.probe_every_s = every_s or self.cfg.alerts.reward_outage.after_s
        if what != self.state.waiting_for:
            self.state.waiting_for = what
            self.state.wake.set()

    def set_version(self, version: int) -> None:
        self.policy_version = version
        self.state.wake.set()

    def take_draw(self) -> Draw:
        if self.replay:
            return self.replay.popleft()
        index = self.dataset.next_indices(1)[0]
        self.next_draw += 1
        return Draw(self.next_draw - 1, index)

    def make_task(self, draw: Draw) -> common_pb2.PromptTask:
        item = self.dataset[draw.dataset_index]
        sampling = rollout_sampling(self.cfg).to_proto(seed=sampling_seed(self.cfg.run.seed, draw.number))
        # an estimator that declares greedy_rewards (ReMax) gets a greedy response per prompt
        sampling.greedy_baseline = "greedy_rewards" in estimator_needs(self.cfg.algorithm.advantage_estimator)
        return common_pb2.PromptTask(
            run_id=self.run_id,
            group_id=f"{self.run_id}-{uuid.uuid4().hex[:16]}",
            prompt_text=item.text,
            prompt_token_ids=pack_int32(item.prompt_ids),
            sampling=sampling,
            **task_fields(item.row),  # ground truth (text and JSON), data source, extras, messages
            environment=self.cfg.environment.name if self.cfg.environment else "",  # "" = single turn
            min_policy_version=self.min_version(),
            dataset_index=item.row.ref.index,
            created_unix=time.time(),
        )

    def min_version(self) -> int:
        """The version the next prompt asks for: the oldest still accepted when trained."""
        learner = self.cfg.learner
        return min_policy_version(
            version=self.policy_version,
            trained=self.trained,
            ahead=self.state.in_flight,
            prompts_per_step=learner.prompts_per_step,
            push_every=learner.push_every,
            max_staleness=learner.max_staleness,
        )

    async def publish_next(self) -> None:
        draw = self.take_draw()
        task = self.make_task(draw)
        # Outstanding before the await, together with the cursor's move: a checkpoint taken
        # while the publish is in flight saves the draw as pending instead of losing it.
        self.outstanding[task.group_id] = draw
        # In the ledger before the await (write-ahead): a learner killed once NATS has the task
        # but before this line would leave a group its successor drops as orphaned yet no
        # ledger ever published.
        self.ledger.published(task.group_id, task.min_policy_version, draw=draw.number)
        try:
            # One trace per group: its root span starts here, the context rides along.
            with start_root_group_span(task.group_id, policy_version=self.policy_version):
                await self.bus.publish(
                    topology.output_stage("learner"), task, msg_id=task.group_id, headers=inject_headers()
                )
        except BaseException:
            del self.outstanding[task.group_id]
            self.replay.appendleft(draw)  # the next publish takes it again, under a new id
            self.ledger.dropped(task.group_id, "not_sent", task.min_policy_version)
            raise
        self.last_publish = time.monotonic()
        self.state.published += 1

    async def run(self) -> None:
        """Keep the in-flight bound full until cancelled."""
        while True:
            while not self.state.paused and self.state.in_flight < self.wanted():
                await self.publish_next()
            self.state.wake.clear()
            # Waiting on an outage with no probe out: wake when the next one is due.
            idle_probe = self.state.waiting_for and self.state.in_flight == len(self.kept) and not self.state.paused
            probe_in = self.until_probe() if idle_probe else None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.state.wake.wait(), timeout=probe_in)

    def state_dict(self) -> dict:
        pending = sorted([*self.outstanding.values(), *self.replay], key=lambda d: d.number)
        return {
            "cursor": self.dataset.state_dict(),
            "next_draw": self.next_draw,
            "pending": [[d.number, d.dataset_index] for d in pending],
        }

    def load_state_dict(self, state: dict) -> None:
        self.dataset.load_state_dict(state["cursor"])
        self.next_draw = int(state["next_draw"])
        self.replay = deque(Draw(int(n), int(i)) for n, i in state["pending"])
