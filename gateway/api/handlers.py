"""One async function per RPC of meshrl.gateway.v1.GatewayService, shared by the gRPC and
HTTP transports: `await handlers.PauseRun(request, who)` → the response message; the
streaming RPCs are async generators of Record. The caller's role is checked before the call
(dispatch.py); every RPC that changes a run appends a row to
RUN_DIR/audit.jsonl naming the token's holder and, while the run is live, publishes it on the
run's events subject (meshrl.run.audit).

Simplification: samples pages re-read samples.jsonl on each call (it grows by a few rows
per step; a run of 10k steps is a few MB).
"""

from __future__ import annotations

import asyncio
from typing import AsyncIterator

from google.protobuf import struct_pb2

from meshrl import run_layout as layout
from meshrl.api.gateway.v1 import gateway_pb2 as pb
from meshrl.gateway import actions
from meshrl.gateway.auth.tenant import TenantPolicy
from meshrl.gateway.auth.tokens import Principal
from meshrl.gateway.errors import invalid, not_found, precondition
from meshrl.gateway.runs.root import RunsRoot, check_name
from meshrl.gateway.runs.samples import view_row
from meshrl.gateway.runs.status import ended_status, live_status
from meshrl.run.audit import record_action, record_and_announce
from meshrl.run.records import follow_rows, read_rows
from meshrl.run.secrets import grpc_user_env, secrets_dir
from meshrl.run_layout import RunDir
from meshrl.transport.rpc.mesh_tls import caller_env

STREAM_FILES = {"StreamMetrics": layout.METRICS, "StreamAlerts": layout.ALERTS, "StreamEvents": layout.AUDIT}
MAX_PAGE = 200


def struct(row: dict) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    out.update(row)
    return out


class Handlers:
    def __init__(self, root: RunsRoot, tenants: TenantPolicy | None = None):
        self.root = root
        self.tenants = tenants or TenantPolicy()  # what a submitted run may reach (auth/tenant.py)

    def live(self, name: str):
        info = self.root.launcher(name)
        if info is None:
            raise precondition(
                f"run {name!r} is not running (no live launcher); resume it with "
                f"`meshrl train --resume {self.root.path(name)}`"
            )
        return info

    def grpc_tls(self, name: str):
        """Calls to the run's services in the block present the run's admin gRPC TLS files
        (a launch.grpc_tls run has its own CA); none made: this process's environment."""
        return caller_env(grpc_user_env(secrets_dir(self.root.path(name)), "admin"))

    async def audit(self, name: str, who: Principal, action: str, **what) -> None:
        """audit.jsonl, and the run's events subject while it is live (meshrl.run.audit)."""
        await record_and_announce(
            self.root.path(name), self.root.launcher(name), action, who=who.name, role=who.role, via="gateway", **what
        )

    async def ListRuns(self, req: pb.ListRunsRequest, who: Principal) -> pb.ListRunsResponse:
        return pb.ListRunsResponse(runs=self.root.summaries())

    async def GetRunStatus(self, req: pb.GetRunStatusRequest, who: Principal) -> pb.GetRunStatusResponse:
        summary, info = self.root.summary(req.run), self.root.launcher(req.run)
        with self.grpc_tls(req.run):
            out = await live_status(info, self.root.path(req.run)) if info else ended_status(self.root.path(req.run))
        out.run.CopyFrom(summary)
        return out

    async def ListCheckpoints(self, req: pb.ListCheckpointsRequest, who: Principal) -> pb.ListCheckpointsResponse:
        from meshrl.inputs.checkpoint.scan import list_checkpoints

        rows = list_checkpoints(self.root.path(req.run), full=False)
        return pb.ListCheckpointsResponse(
            checkpoints=[
                pb.Checkpoint(
                    step=r.step,
                    status=r.status,
                    created=r.created or "",
                    size_bytes=r.size,
                    tags=r.tags,
                    reason=r.reason or "",
                )
                for r in rows
            ]
        )

    async def ListSamples(self, req: pb.ListSamplesRequest, who: Principal) -> pb.ListSamplesResponse:
        if req.split not in ("", "train", "eval"):
            raise invalid(f"split {req.split!r}: use 'train', 'eval' or '' for both")
        rows = [r for r in read_rows(RunDir(self.root.path(req.run)).samples) if req.split in ("", r.get("split"))]
        rows.reverse()  # newest first
        size = min(req.page_size or 20, MAX_PAGE)
        try:
            start = int(req.page_token or 0)
        except ValueError:
            raise invalid(f"page_token {req.page_token!r} is not one this API gave out") from None
        end = start + size
        return pb.ListSamplesResponse(
            samples=[struct(view_row(r)) for r in rows[start:end]],  # observations also without markup
            total=len(rows),
            next_page_token=str(end) if end < len(rows) else "",
        )

    async def GetGroupTrace(self, req: pb.GetGroupTraceRequest, who: Principal) -> pb.GetGroupTraceResponse:
        from meshrl.telemetry.spans.read import TraceNotFound, linking_spans, load_spans, trace_for_group

        path = self.root.path(req.run)
        try:
            spans = load_spans(path)
            tree = trace_for_group(path, req.group_id, spans=spans)
        except (FileNotFoundError, TraceNotFound) as err:
            raise not_found(str(err)) from None
        linked = linking_spans(spans, {s["trace_id"] for s in tree})
        return pb.GetGroupTraceResponse(spans=[struct(s) for s in tree], linked=[struct(s) for s in linked])

    async def _stream(self, rpc: str, req: pb.StreamRecordsRequest) -> AsyncIterator[pb.Record]:
        path = self.root.path(req.run) / STREAM_FILES[rpc]
        alive = lambda: self.root.launcher(req.run) is not None  # noqa: E731
        async for index, row in follow_rows(path, from_index=req.from_index, follow=req.follow, alive=alive):
            yield pb.Record(index=index, row=struct(row))

    def StreamMetrics(self, req, who):
        return self._stream("StreamMetrics", req)

    def StreamAlerts(self, req, who):
        return self._stream("StreamAlerts", req)

    def StreamEvents(self, req, who):
        return self._stream("StreamEvents", req)

    async def PauseRun(self, req: pb.RunActionRequest, who: Principal) -> pb.RunActionResponse:
        with self.grpc_tls(req.run):
            out = await actions.pause_or_resume(
                self.live(req.run), "Pause", req.reason or f"paused by {who.name}", who.name
            )
        await self.audit(req.run, who, "pause", reason=req.reason, step=out.learner.step)
        return out

    async def ResumeRun(self, req: pb.RunActionRequest, who: Principal) -> pb.RunActionResponse:
        with self.grpc_tls(req.run):
            out = await actions.pause_or_resume(self.live(req.run), "Resume", req.reason, who.name)
        await self.audit(req.run, who, "resume", reason=req.reason, step=out.learner.step)
        return out

    async def CheckpointRun(self, req: pb.RunActionRequest, who: Principal) -> pb.RunActionResponse:
        with self.grpc_tls(req.run):
            out = await actions.checkpoint(self.live(req.run), req.reason, who.name)
        await self.audit(req.run, who, "checkpoint", step=out.checkpoint_step)
        return out

    async def StopRun(self, req: pb.RunActionRequest, who: Principal) -> pb.RunActionResponse:
        info = self.live(req.run)
        out = actions.stop(info, self.root.path(req.run))  # refused (nothing audited) unless it is the launcher
        await self.audit(req.run, who, "stop", run_id=info.run_id, reason=req.reason)
        return out

    async def ScaleService(self, req: pb.ScaleServiceRequest, who: Principal) -> pb.RunActionResponse:
        info = self.live(req.run)
        out, changes = actions.scale(info, self.root.path(req.run), req.service, req.replicas)
        await self.audit(req.run, who, "scale", run_id=info.run_id, changes=changes)
        return out

    async def ExportRun(self, req: pb.ExportRunRequest, who: Principal) -> pb.RunActionResponse:
        step = req.step if req.HasField("step") else None
        out = await asyncio.to_thread(actions.export, self.root.path(req.run), step)
        await self.audit(req.run, who, "export", step=out.checkpoint_step, path=out.path)
        return out

    async def SubmitRun(self, req: pb.SubmitRunRequest, who: Principal) -> pb.SubmitRunResponse:
        name = check_name(req.name)
        pid = actions.submit(self.root.root, name, req.config_yaml, list(req.overrides), self.tenants)
        # The run dir is the launcher's to make: the submission is audited beside its config.
        record_action(
            self.root.root / ".submitted",
            "submit",
            run=name,
            who=who.name,
            role=who.role,
            via="gateway",
            overrides=list(req.overrides),
            launcher_pid=pid,
        )
        return pb.SubmitRunResponse(run=name, launcher_pid=pid)

    async def RollbackRun(self, req: pb.RollbackRunRequest, who: Principal) -> pb.RunActionResponse:
        path = self.root.path(req.run)
        out = actions.rollback(path, self.root.launcher(req.run) is not None, req.to_step)
        await self.audit(req.run, who, "rollback", to_step=req.to_step)
        return out
