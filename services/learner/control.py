"""`LearnerControlService`: status, pause, resume and checkpoint-now for a running job.

The servicer only flips flags and reads counters; the training loop acts on them between
steps, so a control call never interrupts an update half-way. The same flags serve the
alert rules (pause / stop after a checkpoint) and preemption (SIGTERM = request_stop).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import grpc

from meshrl.api.common.v1 import common_pb2
from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.inputs.checkpoint.errors import CheckpointError
from meshrl.inputs.checkpoint.tags import check_tag
from meshrl.run.audit import ON_BEHALF_OF
from meshrl.services.learner.feeder import FeederState


@dataclass
class LearnerState:
    """What the loop publishes about itself and what control calls ask of it."""

    run_id: str
    total_steps: int
    state: int = common_pb2.RUN_STATE_STARTING
    step: int = 0
    policy_version: int = 0
    groups_trained: int = 0
    groups_dropped_stale: int = 0
    in_flight: int = 0
    last_metrics: dict = field(default_factory=dict)
    message: str = ""
    checkpoint_requests: asyncio.Queue = field(default_factory=asyncio.Queue)
    resumed: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    feeder: FeederState | None = None  # the online run's: pausing the run also stops new prompts

    def __post_init__(self):
        self.resumed.set()

    def to_proto(self) -> common_pb2.RunStatus:
        metrics = {k: float(v) for k, v in self.last_metrics.items() if isinstance(v, (int, float))}
        return common_pb2.RunStatus(
            run_id=self.run_id,
            state=self.state,
            step=self.step,
            total_steps=self.total_steps,
            policy_version=self.policy_version,
            groups_trained=self.groups_trained,
            groups_in_flight=self.groups_in_flight(),
            groups_dropped_stale=self.groups_dropped_stale,
            last_metrics=metrics,
            message=self.message or self.waiting_message(),
        )

    def groups_in_flight(self) -> int:
        """Groups published and not yet trained or dropped, counted now: the feeder's own count
        (`in_flight` is a snapshot taken after a step's groups are settled, 0 on an on-policy run
        all through the next step, while its groups are played)."""
        return self.feeder.in_flight if self.feeder is not None else self.in_flight

    def waiting_message(self) -> str:
        waiting = self.feeder.waiting_for if self.feeder is not None else ""
        return f"waiting for {waiting}" if waiting else ""

    async def wait_if_paused(self) -> None:
        """Return when resumed, or at once when a stop is requested meanwhile."""
        if self.resumed.is_set():
            return
        waits = [asyncio.ensure_future(e.wait()) for e in (self.resumed, self.stopping)]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for w in waits:
            w.cancel()

    def pause(self, reason: str) -> None:
        self.resumed.clear()
        if self.feeder is not None:
            self.feeder.paused = True
        self.state = common_pb2.RUN_STATE_PAUSED
        self.message = f"paused: {reason}"

    def resume(self) -> None:
        if self.feeder is not None:
            self.feeder.paused = False
            self.feeder.wake.set()
        self.state = common_pb2.RUN_STATE_RUNNING
        self.message = ""
        self.resumed.set()

    def request_stop(self, reason: str) -> None:
        """Finish (or abandon, if still gathering) the current step, checkpoint, exit."""
        self.message = f"stopping: {reason}"
        self.stopping.set()


def caller_of(context) -> str:
    """Who made a control call: the client certificate's name under mutual TLS, else the peer."""
    names = (context.auth_context() or {}).get("x509_common_name") or []
    return f"cert:{names[0].decode()}" if names else f"peer:{context.peer()}"


class LearnerControl(learner_pb2_grpc.LearnerControlServiceServicer):
    """`audit(action, who, **what)` records every pause / resume / checkpoint call (audit.jsonl
    and the run's events subject), whoever the caller and whatever its metadata: `who` is the
    authenticated caller (its certificate), and a caller's ON_BEHALF_OF claim (the gateway's
    user) is recorded beside it, never trusted to skip the row. The default records nothing
    (a servicer under test)."""

    def __init__(self, state: LearnerState, audit=None):
        self.run = state
        self.audit = audit

    async def _audited(self, context, action: str, **what) -> None:
        if self.audit is None:
            return
        claimed = dict(context.invocation_metadata() or ()).get(ON_BEHALF_OF)
        if claimed:
            what["on_behalf_of"] = claimed[:200]
        await self.audit(action, caller_of(context), step=self.run.step, **what)

    async def GetStatus(self, request, context):
        return learner_pb2.GetStatusResponse(status=self.run.to_proto())

    async def Pause(self, request, context):
        self.run.pause(request.reason or "by request")
        await self._audited(context, "pause", reason=request.reason)
        return learner_pb2.PauseResponse(status=self.run.to_proto())

    async def Resume(self, request, context):
        self.run.resume()
        await self._audited(context, "resume")
        return learner_pb2.ResumeResponse(status=self.run.to_proto())

    async def Checkpoint(self, request, context):
        try:
            check_tag(request.tag) if request.tag else None
        except CheckpointError as err:  # refused here: a bad tag would fail the save after it was written
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"CheckpointRequest.tag: {err}")
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        await self.run.checkpoint_requests.put((request.tag, done))
        step, path = await done
        await self._audited(context, "checkpoint", checkpoint_step=step, path=path)
        return learner_pb2.CheckpointResponse(step=step, path=path)
