"""What the OpenEnv adapter costs: the same guessing game played through meshrl's environment
SDK natively, and through the adapter against a real OpenEnv server (openenv 0.10.0's classes).

    .venv/bin/python -m benchmarks.openenv_adapter [--episodes 200] [--concurrency 8] [--rounds 3]

Three processes on 127.0.0.1: the OpenEnv server (tests/services/environment/adapters/
openenv_guess_server.py, in the openenv venv: bash scripts/adapter_venv.sh openenv), an
environment server serving the adapter (`openenv_environment`), and one serving `NativeGuess`,
the same game written with meshrl.env_sdk. A gRPC client plays `--episodes` episodes on each,
`--concurrency` at once, each Reset (seeded), three Steps (two wrong guesses, then the right
one: the rewards checked) and Close. Reported per server: Step latency p50/p99 seen by the
client, episodes/s, and the resident memory (RSS) of the serving processes after the rounds
(the adapter's own and the OpenEnv server's). Each figure is the median over `--rounds`
rounds, the two servers interleaved in each round.
Simplified: plaintext gRPC, no token (both paths alike); the first round's first episodes
warm both servers and are counted.
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
from meshrl.env_sdk import Environment, Reset, Step, serve
from tests.fixtures.adapters import adapter_python
from tests.services.environment.adapters.openenv_servers import guess_server


class NativeGuess(Environment):
    """The OpenEnv test server's game, natively: target seed % 10 + 1, reward 1 - 0.25 * wrong."""

    name = "guess"

    def reset(self, task):
        self.target, self.wrong = (task.seed % 10 + 1) if task.seed else 7, 0
        return Reset(["Guess my number, from 1 to 10."])

    def step(self, turn):
        numbers = [int(w) for w in turn.text.split() if w.lstrip("-").isdigit()]
        if numbers and numbers[-1] == self.target:
            return Step(["right"], reward=1.0 - 0.25 * self.wrong, done=True)
        self.wrong += 1
        return Step(["higher" if numbers and numbers[-1] < self.target else "lower"], reward=0.0)


def serve_one(kind: str, port: int, url: str) -> None:
    """The child's work: serve the adapter or the native game on `port` until killed."""
    if kind == "native":
        serve({"guess": NativeGuess}, port=port)
        return
    from meshrl.config.openenv import OpenEnvConfig  # lazy: only the adapter's child needs it
    from meshrl.services.environment.adapters.openenv.environment import openenv_environment

    serve({"guess": openenv_environment("guess", OpenEnvConfig(url=url, observation_field="prompt"))}, port=port)


async def episode(stub, i: int, latencies: list[float]) -> None:
    seed = 1 + i % 9  # targets 2..10
    target = seed % 10 + 1
    answer = await play(stub, f"b{time.monotonic_ns()}/{i}", seed, ["1", "11", str(target)], latencies)
    assert answer.done and answer.reward == 0.5, answer  # two wrong guesses: 1 - 0.25 * 2


async def play(stub, eid: str, seed: int, texts: list[str], latencies: list[float]) -> env_pb2.StepResponse:
    """Reset, one Step per text (each timed), Close; the last answer."""
    await stub.Reset(env_pb2.ResetRequest(episode_id=eid, environment="guess", seed=seed), timeout=30)
    for turn, text in enumerate(texts):
        start = time.perf_counter()
        answer = await stub.Step(env_pb2.StepRequest(episode_id=eid, turn=turn, text=text), timeout=30)
        latencies.append(time.perf_counter() - start)
    await stub.Close(env_pb2.CloseRequest(episode_id=eid), timeout=30)
    return answer


async def measure(address: str, episodes: int, concurrency: int, episode=episode) -> dict:
    latencies: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = env_pb2_grpc.EnvironmentServiceStub(channel)

        async def one(i):
            async with gate:
                await episode(stub, i, latencies)

        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(episodes)))
        wall = time.perf_counter() - start
    q = statistics.quantiles(latencies, n=100)
    return {"p50_ms": q[49] * 1e3, "p99_ms": q[98] * 1e3, "episodes_s": episodes / wall}


def start_child(kind: str, url: str, module: str = "benchmarks.openenv_adapter") -> tuple[subprocess.Popen, str]:
    """`python -m module --serve kind` on a free port, once it accepts connections."""
    port = free_port()
    argv = [sys.executable, "-m", module, "--serve", kind, "--port", str(port), "--url", url]
    proc = subprocess.Popen(argv)
    time.sleep(0.5)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            try:
                grpc.channel_ready_future(ch).result(timeout=2)
                return proc, f"127.0.0.1:{port}"
            except grpc.FutureTimeoutError:
                continue
    raise RuntimeError(f"the {kind} server did not start")


def rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", choices=["native", "adapter"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--url", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve_one(args.serve, args.port, args.url)
        return
    with guess_server(adapter_python("openenv")) as (server, url):
        children = {kind: start_child(kind, url) for kind in ("native", "adapter")}
        try:
            runs = {kind: [] for kind in children}
            for _ in range(args.rounds):
                for kind, (_, address) in children.items():
                    runs[kind].append(asyncio.run(measure(address, args.episodes, args.concurrency)))
            memory = {kind: rss_mb(proc.pid) for kind, (proc, _) in children.items()}
            memory["openenv server"] = rss_mb(server.pid)
        finally:
            for proc, _ in children.values():
                proc.kill()
    for kind, rows in runs.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{kind:8s} step p50 {med['p50_ms']:.2f} ms  p99 {med['p99_ms']:.2f} ms  {med['episodes_s']:.1f} episodes/s"
        )
    print("RSS after the rounds: " + ", ".join(f"{k} {v:.0f} MiB" for k, v in memory.items()))


if __name__ == "__main__":
    main()
