"""What a running run looks like now: the learner's status and every announced replica.

    status = asyncio.run(gather_status(find_launcher(run_dir)))
    status["learner"]   # {"state": "RUNNING", "step": 3, "total_steps": 8, "policy_version": 3, ...}
                        # or {"error": "unreachable at 127.0.0.1:PORT (...)"}
    status["replicas"]  # [{"service": "rollout", "replica": "rollout-0", "grpc": ..., "weights_version": 3,
                        #   "ready": True, "groups_generated": 20}, {"service": "reward", ...}]

Sources: LearnerControlService.GetStatus on the learner's control address; the run KV's
`services.<kind>.<replica>` entries (the replicas that announced a gRPC address and have not
withdrawn it); for each rollout, RolloutService.GetStatus, which says which weights version
its engine holds (so no extra announcement is needed); for each environment replica, its
grpc.health.v1 status (`ready`: SERVING); the dead-letter stream, counted by
stage and reason (`status["dead_letters"]`, see meshrl.transport.bus.dead_summary). Every call has a short deadline: a
replica that does not answer is listed with the error, never waited for.

Restarts, from the file the launcher's restart reporter writes (meshrl.launch.restarts):
`restart_counts(run_dir)` counts the `restart` rows of RUN_DIR/restarts.jsonl, every launcher
of the run included; `meshrl status` shows them as `restarts: reward-0 ×1, rollout-1 ×2`.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

from meshrl import topology
from meshrl.api.common.v1 import common_pb2
from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.api.rollout.v1 import rollout_pb2, rollout_pb2_grpc
from meshrl.run.presence import LauncherInfo
from meshrl.run_layout import RunDir
from meshrl.transport.bus import Bus
from meshrl.transport.bus.dead_summary import dead_letter_summary
from meshrl.transport.bus.registry import service_entries
from meshrl.transport.rpc.channel import is_serving, open_channel

KINDS = topology.watched()  # every kind with replicas (the learner has its own row)
HEALTH_ONLY = ("environment",)
PLACEMENT = (
    "workers",
    "cores",
)  # a rollout's tensor-parallel workers and their CPU cores (as announced)  # replicas with no GetStatus: `ready` is their health


def unreachable(err: Exception):
    """What a failed status call says: the gRPC status code, else the error itself."""
    return err.code() if hasattr(err, "code") else err


async def learner_status(address: str, timeout_s: float) -> dict:
    async with open_channel(address, retries=False) as channel:
        try:
            reply = await learner_pb2_grpc.LearnerControlServiceStub(channel).GetStatus(
                learner_pb2.GetStatusRequest(), timeout=timeout_s
            )
        except Exception as err:  # noqa: BLE001 - any failure is shown, the rest still printed
            return {"grpc": address, "error": f"unreachable ({unreachable(err)})"}
    s = reply.status
    return {
        "grpc": address,
        "state": common_pb2.RunState.Name(s.state).removeprefix("RUN_STATE_"),
        "step": s.step,
        "total_steps": s.total_steps,
        "policy_version": s.policy_version,
        "groups_trained": s.groups_trained,
        "groups_in_flight": s.groups_in_flight,
        "message": s.message,
    }


async def rollout_status(address: str, timeout_s: float) -> dict:
    async with open_channel(address, retries=False) as channel:
        try:
            reply = await rollout_pb2_grpc.RolloutServiceStub(channel).GetStatus(
                rollout_pb2.GetStatusRequest(), timeout=timeout_s
            )
        except Exception as err:  # noqa: BLE001
            return {"error": f"unreachable ({unreachable(err)})"}
    return {"weights_version": reply.policy_version, "ready": reply.ready, "groups_generated": reply.groups_generated}


async def replica_rows(state, timeout_s: float) -> list[dict]:
    """One row per announced replica, rollouts with the weights version they hold."""
    rows = [
        {
            "service": kind,
            "replica": e.get("replica", "?"),
            "grpc": e.get("grpc", ""),
            **{k: e[k] for k in PLACEMENT if k in e},
        }
        for kind in KINDS
        for e in await service_entries(state, kind)
    ]
    probes = [rollout_status(r["grpc"], timeout_s) for r in rows if r["service"] == "rollout"]
    for row, extra in zip([r for r in rows if r["service"] == "rollout"], await asyncio.gather(*probes)):
        row.update(extra)
    healthy = [r for r in rows if r["service"] in HEALTH_ONLY]
    for row, serving in zip(healthy, await asyncio.gather(*(_serving(r["grpc"], timeout_s) for r in healthy))):
        row["ready"] = serving
    return rows


async def _serving(address: str, timeout_s: float) -> bool:
    try:
        return await is_serving(address, timeout=timeout_s)
    except Exception:  # noqa: BLE001 - an address that cannot be dialled is not serving
        return False


async def gather_status(info: LauncherInfo, timeout_s: float = 3.0) -> dict:
    """The learner's status, the announced replicas and the counts the launcher keeps."""
    learner = asyncio.ensure_future(learner_status(info.learner_grpc, timeout_s))
    async with await Bus.connect(info.nats_url, info.run_id, name="meshrl-status", timeout=timeout_s) as bus:
        replicas = await replica_rows(bus.state, timeout_s)
        dead = await dead_letter_summary(bus.js, info.run_id)
    return {
        "run_id": info.run_id,
        "launcher_pid": info.pid,
        "nats": info.nats_url,
        "wanted": info.replicas,
        "learner": await learner,
        "replicas": replicas,
        "dead_letters": dead,
    }


def restart_counts(run_dir: str | Path) -> dict[str, int]:
    """Restarts per service key from RUN_DIR/restarts.jsonl ({} when there is none).

    A line that does not parse (cut by a crash mid-write) is skipped, never fatal: this is
    read for a status display.
    """
    path = RunDir(run_dir).restarts
    if not path.is_file():
        return {}
    counts: Counter[str] = Counter()
    for line in path.read_text().splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("event") == "restart":
            counts[str(row.get("service", "?"))] += 1
    return dict(sorted(counts.items()))


def restarts_line(counts: dict[str, int]) -> str:
    """'restarts: reward-0 ×1, rollout-1 ×2' / 'restarts: none'."""
    return "restarts: " + (", ".join(f"{key} ×{n}" for key, n in counts.items()) or "none")
