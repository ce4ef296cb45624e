"""An environment adapter against a native env_sdk service doing the same work: what each
adapter benchmark (openenv_adapter, textarena_adapter, verifiers_adapter) shares.

Each side is its own process (`python -m MODULE --serve native|adapter --port P ...`); rounds
alternate between them so a load that comes and goes hits both alike. Per round and side:
Step latency p50/p99 over every Step of `episodes` episodes (`concurrency` at once) and
episodes/s; after the rounds, each side's resident memory with its children (an adapter's
library worker). The median over rounds is printed.

    args = bench_args(__doc__)          # --episodes --concurrency --rounds, and the hidden --serve/--port
    children = {k: start_child(MODULE, k, extra) for k in SIDES}
    print_report(*compare(children, episode, args))
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

import grpc
import psutil

from meshrl.addresses import free_port
from meshrl.api.env.v1 import env_pb2, env_pb2_grpc

SIDES = ("native", "adapter")


def bench_args(doc: str, **extra: str) -> argparse.Namespace:
    """The shared flags; `extra` hidden string flags a side's process needs (e.g. url="")."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    for name, default in extra.items():
        parser.add_argument(f"--{name}", default=default, help=argparse.SUPPRESS)
    return parser.parse_args()


async def play(stub, eid: str, seed: int, texts: list[str], latencies: list[float]) -> env_pb2.StepResponse:
    """Reset, one Step per text (each timed into `latencies`), Close; the last answer."""
    await stub.Reset(env_pb2.ResetRequest(episode_id=eid, environment="guess", seed=seed), timeout=30)
    answer = None
    for turn, text in enumerate(texts):
        start_s = time.perf_counter()
        answer = await stub.Step(env_pb2.StepRequest(episode_id=eid, turn=turn, text=text), timeout=30)
        latencies.append(time.perf_counter() - start_s)
    await stub.Close(env_pb2.CloseRequest(episode_id=eid), timeout=30)
    return answer


async def measure(address: str, episodes: int, concurrency: int, episode) -> dict:
    """`episode(stub, i, latencies)` `episodes` times, `concurrency` at once: p50/p99 and rate."""
    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)

        async def one(i):
            async with gate:
                await episode(stub, i, latencies)

        start_s = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(episodes)))
        wall = time.perf_counter() - start_s
    q = statistics.quantiles(latencies, n=100)
    return {"p50_ms": q[49] * 1e3, "p99_ms": q[98] * 1e3, "episodes_s": episodes / wall}


def start_child(module: str, kind: str, extra: list[str] = (), timeout_s: float = 600) -> tuple[subprocess.Popen, str]:
    """`python -m module --serve kind` on a free port, once it accepts connections."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", module, "--serve", kind, "--port", str(port), *extra])
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                grpc.channel_ready_future(channel).result(timeout=2)
                return proc, f"127.0.0.1:{port}"
            except grpc.FutureTimeoutError:
                continue
    raise RuntimeError(f"the {kind} server did not start")


def tree_rss_mb(pid: int) -> float:
    """The process's resident memory with its children's (an adapter's library worker)."""
    proc = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def compare(children: dict, episode, args) -> tuple[dict, dict]:
    """(runs per side, memory per side) over `args.rounds` alternating rounds; the children are
    killed (with theirs) whatever happens."""
    try:
        runs = {kind: [] for kind in children}
        for _ in range(args.rounds):
            for kind, (_, address) in children.items():
                runs[kind].append(asyncio.run(measure(address, args.episodes, args.concurrency, episode)))
        return runs, {kind: tree_rss_mb(proc.pid) for kind, (proc, _) in children.items()}
    finally:
        for proc, _ in children.values():
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()


def print_report(runs: dict, memory: dict) -> None:
    for kind, rows in runs.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{kind:8s} step p50 {med['p50_ms']:.2f} ms  p99 {med['p99_ms']:.2f} ms  {med['episodes_s']:.1f} episodes/s"
        )
    print("RSS after the rounds (with children): " + ", ".join(f"{k} {v:.0f} MiB" for k, v in memory.items()))
