"""Publishing prompt tasks with backpressure and a staleness bound.

Groups "in flight" are those published but not yet trained on (or dropped). The feeder
keeps at most `learner.in_flight_bound` of them, so:
- `max_staleness = 0` (default bound = prompts_per_step): the next step's prompts go out
  only after the current step trained and pushed, so every group is sampled by the exact
  weights it is trained against (synchronous on-policy);
- `max_staleness = k`: up to k steps of prompts are sampled while the learner trains;
  each task asks for weights no older than `version - k`, and a group that arrives older
  than that anyway is dropped and counted.
"""
from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field

from meshrl.bus.codec import pack_int32
from meshrl.common.v1 import common_pb2
from meshrl.config import RunConfig
from meshrl.services.learner.ledger import Ledger
from meshrl.telemetry.tracing import inject_headers, start_root_group_span


@dataclass
class FeederState:
    published: int = 0
    settled: int = 0  # trained on, or dropped
    paused: bool = False
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def in_flight(self) -> int:
        return self.published - self.settled


class PromptFeeder:
    def __init__(self, bus, dataset, cfg: RunConfig, run_id: str, ledger: Ledger | None = None):
        self.bus, self.dataset, self.cfg, self.run_id = bus, dataset, cfg, run_id
        self.ledger = ledger or Ledger(None)
        self.state = FeederState()
        self.policy_version = 0

    def settle(self, n: int = 1) -> None:
        """Groups trained on or dropped free their place in the in-flight bound."""
        self.state.settled += n
        self.state.wake.set()

    def set_version(self, version: int) -> None:
        self.policy_version = version
        self.state.wake.set()

    def make_task(self, item) -> common_pb2.PromptTask:
        s = self.cfg.rollout.sampling
        return common_pb2.PromptTask(
            run_id=self.run_id, group_id=f"{self.run_id}-{uuid.uuid4().hex[:16]}",
            prompt_text=item.text, prompt_token_ids=pack_int32(item.prompt_ids),
            sampling=common_pb2.SamplingParams(
                n=s.group_size, temperature=s.temperature, top_p=s.top_p,
                max_tokens=s.max_tokens, stop=list(s.stop)),
            ground_truth=str(item.row.ground_truth or ""), data_source=item.row.data_source or "",
            min_policy_version=max(0, self.policy_version - self.cfg.learner.max_staleness),
            dataset_index=item.row.ref.index, created_unix=time.time())

    async def run(self) -> None:
        """Keep the in-flight bound full until cancelled."""
        bound = self.cfg.learner.in_flight_bound
        while True:
            while not self.state.paused and self.state.in_flight < bound:
                task = self.make_task(self.dataset.next_batch(1)[0])
                # One trace per group: its root span starts here, the context rides along.
                with start_root_group_span(task.group_id, policy_version=self.policy_version):
                    await self.bus.publish("prompts", task, msg_id=task.group_id, headers=inject_headers())
                self.ledger.published(task.group_id, task.min_policy_version)
                self.state.published += 1
            self.state.wake.clear()
            await self.state.wake.wait()
