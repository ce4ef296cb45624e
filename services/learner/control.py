"""`LearnerControlService`: status, pause, resume and checkpoint-now for a running job.

The servicer only flips flags and reads counters; the training loop acts on them between
steps, so a control call never interrupts an update half-way.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from meshrl.common.v1 import common_pb2
from meshrl.learner.v1 import learner_pb2, learner_pb2_grpc


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

    def __post_init__(self):
        self.resumed.set()

    def to_proto(self) -> common_pb2.RunStatus:
        metrics = {k: float(v) for k, v in self.last_metrics.items() if isinstance(v, (int, float))}
        return common_pb2.RunStatus(
            run_id=self.run_id, state=self.state, step=self.step, total_steps=self.total_steps,
            policy_version=self.policy_version, groups_trained=self.groups_trained,
            groups_in_flight=self.in_flight, groups_dropped_stale=self.groups_dropped_stale,
            last_metrics=metrics, message=self.message)

    async def wait_if_paused(self) -> None:
        await self.resumed.wait()


class LearnerControl(learner_pb2_grpc.LearnerControlServiceServicer):
    def __init__(self, state: LearnerState, feeder_state):
        self.run, self.feeder_state = state, feeder_state

    async def GetStatus(self, request, context):
        return learner_pb2.GetStatusResponse(status=self.run.to_proto())

    async def Pause(self, request, context):
        self.run.resumed.clear()
        self.feeder_state.paused = True
        self.run.state = common_pb2.RUN_STATE_PAUSED
        self.run.message = f"paused: {request.reason or 'by request'}"
        return learner_pb2.PauseResponse(status=self.run.to_proto())

    async def Resume(self, request, context):
        self.feeder_state.paused = False
        self.feeder_state.wake.set()
        self.run.state = common_pb2.RUN_STATE_RUNNING
        self.run.message = ""
        self.run.resumed.set()
        return learner_pb2.ResumeResponse(status=self.run.to_proto())

    async def Checkpoint(self, request, context):
        done: asyncio.Future = asyncio.get_running_loop().create_future()
        await self.run.checkpoint_requests.put((request.tag, done))
        step, path = await done
        return learner_pb2.CheckpointResponse(step=step, path=path)
