"""What the mesh's default gRPC security costs: mutual TLS with per-method authorisation
(`launch.grpc_tls: mutual`, the default) against TLS alone (`on`) and plaintext (`off`).

    .venv/bin/python -m benchmarks.grpc_tls_cost [--calls 500] [--channels 30] [--rounds 3]

On this machine, with the launcher's own certificates (meshrl.launch.secrets.create_grpc_tls,
EC P-256) and real servers from meshrl.transport.rpc.start_server on 127.0.0.1, each mode's
server started with the environment the launcher gives a service, clients as the learner:
- the launcher's one-off cost: making the run CA and the 7 kinds' certificates;
- a server's start (credentials read, port bound, started): the median of 20;
- a fresh channel's first call (TCP, the TLS handshake, the call) to the learner's GetStatus
  as admin: the median over `--channels` channels;
- a warm call's round trip: the reward service's Score of 64 items (exact_match: the size of
  one step's group batch) as the learner, and the learner's GetStatus as admin, median and
  mean over `--calls` calls.
A training step's gRPC hops are few (learner→reference once per step with a reference;
evaluation; control), so the per-call figures times those hops are the step-time cost.
Each figure is the median over `--rounds` rounds, the three modes interleaved in each round
(a shared host's load moves between rounds, not between modes).
Simplified: one client at a time; the first 20 warm calls are not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from meshrl.api.learner.v1 import learner_pb2, learner_pb2_grpc
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config.schema import RewardComponentConfig
from meshrl.launch.secrets import create_grpc_tls
from meshrl.run.secrets import grpc_user_env
from meshrl.services.learner.control import LearnerControl, LearnerState
from meshrl.services.reward.components import build_components
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.server import start_reward_server
from meshrl.transport.rpc.channel import open_channel
from meshrl.transport.rpc.mesh_tls import CLIENT_AUTH_ENV, caller_env
from meshrl.transport.rpc.server import registration, start_server, stop_server

MODES = ("off", "on", "mutual")
ITEMS = [
    reward_pb2.ScoreItem(id=f"i{i}", response=f"answer {i % 10}", ground_truth_json=f'"answer {i % 7}"')
    for i in range(64)
]


def server_env(secrets: Path, kind: str, mode: str) -> dict[str, str]:
    """What the launcher gives a `kind` service in `mode` (meshrl.launch.secrets.grpc_tls_env)."""
    if mode == "off":
        return {}
    return {**grpc_user_env(secrets, kind), CLIENT_AUTH_ENV: "1" if mode == "mutual" else "0"}


def client_env(secrets: Path, mode: str, kind: str) -> dict[str, str]:
    return {} if mode == "off" else grpc_user_env(secrets, kind)


@contextlib.contextmanager
def environ(values: dict[str, str]):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MESHRL_GRPC_TLS_")}
    with mock.patch.dict(os.environ, {**clean, **values}, clear=True):
        yield


async def start_learner_control(secrets: Path, mode: str):
    with environ(server_env(secrets, "learner", mode)):
        return await start_server(
            [
                registration(
                    learner_pb2_grpc.add_LearnerControlServiceServicer_to_server,
                    LearnerControl(LearnerState(run_id="bench", total_steps=1)),
                    learner_pb2.DESCRIPTOR.services_by_name["LearnerControlService"],
                )
            ],
            host="127.0.0.1",
        )


async def server_start_ms(secrets: Path, mode: str, repeats: int = 20) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        server, _ = await start_learner_control(secrets, mode)
        times.append(time.perf_counter() - start)
        await stop_server(server, 0)
    return statistics.median(times) * 1e3


async def first_call_ms(address: str, secrets: Path, mode: str, channels: int) -> float:
    times = []
    with caller_env(client_env(secrets, mode, "admin") or None):  # `meshrl status`, the gateway
        for _ in range(channels):
            start = time.perf_counter()
            async with open_channel(address, retries=False) as channel:
                await learner_pb2_grpc.LearnerControlServiceStub(channel).GetStatus(
                    learner_pb2.GetStatusRequest(), timeout=10
                )
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def warm_calls_us(address: str, secrets: Path, mode: str, kind: str, calls: int, call) -> tuple[float, float]:
    times = []
    with caller_env(client_env(secrets, mode, kind) or None):
        async with open_channel(address, retries=False) as channel:
            for i in range(calls + 20):
                start = time.perf_counter()
                await call(channel)
                if i >= 20:
                    times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6, statistics.fmean(times) * 1e6


def score(channel):
    return reward_pb2_grpc.RewardServiceStub(channel).Score(
        reward_pb2.ScoreRequest(component="exact", items=ITEMS), timeout=10
    )


def status(channel):
    return learner_pb2_grpc.LearnerControlServiceStub(channel).GetStatus(learner_pb2.GetStatusRequest(), timeout=10)


async def measure_mode(secrets: Path, mode: str, args) -> dict[str, float]:
    learner, learner_port = await start_learner_control(secrets, mode)
    scorer = GroupScorer(build_components([RewardComponentConfig(name="exact", kind="exact_match")], "bench"), {})
    with environ(server_env(secrets, "reward", mode)):
        reward, reward_port = await start_reward_server(scorer, host="127.0.0.1")
    try:
        row = {
            "server start ms": await server_start_ms(secrets, mode),
            "first call ms": await first_call_ms(f"127.0.0.1:{learner_port}", secrets, mode, args.channels),
        }
        row["Score(64) µs median"], row["Score(64) µs mean"] = await warm_calls_us(
            f"127.0.0.1:{reward_port}", secrets, mode, "learner", args.calls, score
        )
        row["GetStatus µs median"], row["GetStatus µs mean"] = await warm_calls_us(
            f"127.0.0.1:{learner_port}", secrets, mode, "admin", args.calls, status
        )
        return row
    finally:
        await stop_server(learner, 0)
        await stop_server(reward, 0)


def certificates_ms(repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as top:
            start = time.perf_counter()
            create_grpc_tls(Path(top) / "secrets")
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def main(args) -> None:
    print(f"launcher: run CA + 7 certificates (create_grpc_tls): {certificates_ms():.1f} ms (median of 5)")
    with tempfile.TemporaryDirectory() as top:
        secrets = Path(top) / "secrets"
        create_grpc_tls(secrets)
        rounds = [{mode: await measure_mode(secrets, mode, args) for mode in MODES} for _ in range(args.rounds)]
    rows = {mode: {c: statistics.median(r[mode][c] for r in rounds) for c in rounds[0][mode]} for mode in MODES}
    print(f"median of {args.rounds} rounds (the modes interleaved in each):")
    columns = list(rows["off"])
    print("| mode | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for mode, row in rows.items():
        print(f"| {mode} | " + " | ".join(f"{row[c]:.1f}" for c in columns) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--channels", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="each mode measured once per round")
    asyncio.run(main(parser.parse_args()))
