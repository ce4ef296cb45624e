"""A run's status as a GetRunStatusResponse, live or ended.

A live run: the learner, every announced replica with the weights version it holds and its
gRPC health, and the depth of each work queue. Sources: LearnerControlService.GetStatus and,
per rollout, RolloutService.GetStatus (through meshrl.run.status); grpc.health.v1 per
replica; the run KV and JetStream's consumer info over the run's NATS, logged in with the
run's admin credential (and TLS) files (passed explicitly, so concurrent calls for different
runs never share an environment variable). Each call has a short deadline: what does not
answer is reported, never waited for.

A run no launcher runs (finished, stopped, failed), read from its run dir as `meshrl status
RUN_DIR` reads it (meshrl.run.summary): the steps it trained, of how many, the policy version
its last step pushed, the groups trained (the ledger) and its outcome (how it ended, the final
reward, held-out accuracy before and after, where final/ is); its state ENDED, or RUNNING while
a learner no launcher here started (compose, Kubernetes) is alive (its heartbeat,
meshrl.run.summary.running_elsewhere).

    await live_status(info, Path("runs/grpo-0412"))   # learner, replicas, queues
    ended_status(Path("runs/grpo-0412"))              # learner state "ENDED"

Simplification: an ended run's status reads its metrics.jsonl and ledger whole at every poll
(every 2 s): one line per step and a few per group, small beside what a step costs.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from meshrl.api.gateway.v1 import gateway_pb2
from meshrl.run.presence import LauncherInfo
from meshrl.run.summary import run_summary, running_elsewhere
from meshrl.run_layout import RunDir

TIMEOUT_S = 2.0


async def health_of(address: str, timeout_s: float) -> str:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from meshrl.transport.rpc.channel import open_channel

    async with open_channel(address, retries=False) as channel:
        try:
            reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout_s)
        except Exception:  # noqa: BLE001 - any failure means it cannot serve now
            return "UNREACHABLE"
    return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)


def replica_message(row: dict, health: str) -> gateway_pb2.Replica:
    out = gateway_pb2.Replica(
        service=row["service"],
        replica=row["replica"],
        grpc=row.get("grpc", ""),
        health=health,
        groups_generated=row.get("groups_generated", 0) or 0,
        error=row.get("error", ""),
    )
    if row.get("weights_version") is not None:
        out.has_weights_version, out.weights_version = True, row["weights_version"]
    return out


async def queue_depths(js, run_id: str) -> list[gateway_pb2.QueueDepth]:
    from meshrl.transport.bus.subjects import STAGES, stage_stream

    out = []
    for stage in STAGES:
        try:
            consumers = await js.consumers_info(stage_stream(run_id, stage))
        except Exception:  # noqa: BLE001 - a stage this run does not use (no reference)
            continue
        out += [
            gateway_pb2.QueueDepth(
                stream=stage, consumer=c.name, pending=c.num_pending or 0, ack_pending=c.num_ack_pending or 0
            )
            for c in consumers
        ]
    return out


async def bus_view(info: LauncherInfo, run_dir: Path, timeout_s: float):
    """(replica rows, queue depths) read over the run's NATS."""
    from meshrl.run.secrets import admin_connect_args
    from meshrl.run.status import replica_rows
    from meshrl.transport.bus import Bus

    async with await Bus.connect(
        info.nats_url, info.run_id, name="meshrl-gateway", timeout=timeout_s, **admin_connect_args(run_dir)
    ) as bus:
        return await replica_rows(bus.state, timeout_s), await queue_depths(bus.js, info.run_id)


def learner_message(d: dict) -> gateway_pb2.Learner:
    fields = {k: v for k, v in d.items() if k in gateway_pb2.Learner.DESCRIPTOR.fields_by_name}
    return gateway_pb2.Learner(**fields)


async def live_status(
    info: LauncherInfo, run_dir: Path, timeout_s: float = TIMEOUT_S
) -> gateway_pb2.GetRunStatusResponse:
    from meshrl.run.status import learner_status

    learner = asyncio.ensure_future(learner_status(info.learner_grpc, timeout_s))
    try:
        rows, queues = await bus_view(info, run_dir, timeout_s)
    except Exception as err:  # noqa: BLE001 - NATS down: show the learner and the error
        rows, queues = [{"service": "nats", "replica": info.nats_url, "error": str(err)}], []
    healths = await asyncio.gather(*(health_of(r["grpc"], timeout_s) if r.get("grpc") else _none() for r in rows))
    return gateway_pb2.GetRunStatusResponse(
        learner=learner_message(await learner),
        wanted=info.replicas,
        replicas=[replica_message(r, h) for r, h in zip(rows, healths)],
        queues=queues,
    )


async def _none() -> str:
    return "UNKNOWN"


def last_line(path: Path, chunk: int = 65536) -> str:
    """The file's last complete line (read from the end, not the whole file)."""
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - chunk))
        lines = [x for x in fh.read().split(b"\n") if x.strip()]
    return lines[-1].decode(errors="replace") if lines else ""


def last_metrics_row(run: RunDir) -> dict:
    """metrics.jsonl's last row; {} when there is none (or its last line is cut mid-write)."""
    if not run.metrics.is_file():
        return {}
    try:
        row = json.loads(last_line(run.metrics) or "{}")
    except ValueError:
        return {}
    return row if isinstance(row, dict) else {}


def outcome_message(summary: dict) -> gateway_pb2.RunOutcome:
    """The run dir's final reward, held-out accuracy before and after, and where final/ is."""
    held = summary["held_out"]
    out = gateway_pb2.RunOutcome(ended=summary["ended"], final_model=summary["final_model"] or "")
    for field, value in (
        ("final_reward", summary["final_reward"]),
        ("accuracy_before", held["before"].get("eval/accuracy")),
        ("accuracy_after", held["after"].get("eval/accuracy")),
    ):
        if isinstance(value, (int, float)):
            setattr(out, field, float(value))
    if isinstance(held["after_step"], int):
        out.accuracy_after_step = held["after_step"]
    prompts = held["after"].get("eval/n", held["before"].get("eval/n"))
    out.eval_prompts = int(prompts) if isinstance(prompts, (int, float)) else 0
    return out


def ended_status(path: Path) -> gateway_pb2.GetRunStatusResponse:
    """From the run dir, read as `meshrl status RUN_DIR` reads it (meshrl.run.summary): steps
    trained (the last step's index + 1, as the live learner counts them) of the total asked,
    the last step's policy version, the groups the ledger says were trained, and the outcome."""
    run = RunDir(path)
    summary = run_summary(path)
    learner = gateway_pb2.Learner(
        state="RUNNING" if running_elsewhere(run) else "ENDED",
        step=summary["steps_trained"],
        total_steps=summary["total_steps"] or 0,
        policy_version=summary["policy_version"] or 0,
        groups_trained=summary["groups"]["trained"],
    )
    return gateway_pb2.GetRunStatusResponse(learner=learner, outcome=outcome_message(summary))
