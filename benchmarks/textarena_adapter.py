"""What the textarena adapter costs: textarena's GuessTheNumber-v0 played through the adapter
(a library worker child in the textarena venv) and the same game written with meshrl's
environment SDK, served natively.

    .venv/bin/python -m benchmarks.textarena_adapter [--episodes 200] [--concurrency 8] [--rounds 3]

Two environment servers on 127.0.0.1, each its own process: one serving the adapter
(`textarena_environment`, its worker child started as the service starts it: bash
scripts/adapter_venv.sh textarena), one serving `NativeGuess`, the game's rules in Python (the
number from `random.seed(seed); random.randint(1, 20)` as textarena draws it, `[n]` guesses,
hints, 1.0 for the right one). A gRPC client plays `--episodes` episodes on each, `--concurrency`
at once: Reset (seeded), two wrong guesses, the right one (reward 1.0 checked), Close. Reported
per server: Step latency p50/p99, episodes/s, and the RSS of the serving processes after the
rounds (the adapter's service and its child). Medians over `--rounds`, the two interleaved.
Simplified: plaintext gRPC, no token; the adapter's child serialises games (one lock: textarena
seeds Python's global random), which the figures include.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import statistics
import time
from types import SimpleNamespace

import psutil

from benchmarks.openenv_adapter import measure, play, rss_mb, start_child
from meshrl.config.textarena import TextArenaConfig
from meshrl.env_sdk import Environment, Reset, Step, serve, start
from meshrl.services.environment.adapters.textarena.start import start_textarena

MODULE = "benchmarks.textarena_adapter"


def target(seed: int) -> int:
    random.seed(seed)
    return random.randint(1, 20)


class NativeGuess(Environment):
    """GuessTheNumber-v0's rules, natively (no invalid-move or turn-limit handling: unused here)."""

    name = "guess"

    def reset(self, task):
        self.target = target(task.seed)
        return Reset(["You are Player 0. You are playing Guess The Number. Enter your guess as [n]."])

    def step(self, turn):
        found = re.search(r"\[(\d+)\]", turn.text)
        guess = int(found.group(1)) if found else None
        if guess == self.target:
            return Step([], reward=1.0, done=True)
        return Step([f"The target number is {'lower' if guess and guess > self.target else 'higher'}."])


def serve_one(kind: str, port: int) -> None:
    if kind == "native":
        serve({"guess": NativeGuess}, port=port)
        return
    settings = SimpleNamespace(name="guess", textarena=TextArenaConfig(game="GuessTheNumber-v0"))

    async def served():  # the worker child is started as the environment service starts it
        server, _ = await start({"guess": await start_textarena(settings)}, port=port)
        await server.wait_for_termination()

    asyncio.run(served())


async def episode(stub, i: int, latencies: list[float]) -> None:
    seed = 1 + i % 50
    n = target(seed)
    wrong = [g for g in range(1, 21) if g != n][:2]
    texts = [f"[{wrong[0]}]", f"I say [{wrong[1]}]", f"so [{n}]"]
    answer = await play(stub, f"b{time.monotonic_ns()}/{i}", seed, texts, latencies)
    assert answer.done and answer.reward == 1.0, answer


def tree_rss_mb(pid: int) -> float:
    """The process and its children (the adapter's library worker)."""
    proc = psutil.Process(pid)
    return rss_mb(pid) + sum(rss_mb(c.pid) for c in proc.children(recursive=True))


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
        serve_one(args.serve, args.port)
        return
    children = {kind: start_child(kind, "", MODULE) for kind in ("native", "adapter")}
    try:
        runs = {kind: [] for kind in children}
        for _ in range(args.rounds):
            for kind, (_, address) in children.items():
                runs[kind].append(asyncio.run(measure(address, args.episodes, args.concurrency, episode)))
        memory = {kind: tree_rss_mb(proc.pid) for kind, (proc, _) in children.items()}
    finally:
        for proc, _ in children.values():
            proc.kill()
    for kind, rows in runs.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{kind:8s} step p50 {med['p50_ms']:.2f} ms  p99 {med['p99_ms']:.2f} ms  {med['episodes_s']:.1f} episodes/s"
        )
    print("RSS after the rounds (service + children): " + ", ".join(f"{k} {v:.0f} MiB" for k, v in memory.items()))


if __name__ == "__main__":
    main()
