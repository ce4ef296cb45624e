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

import asyncio
import random
import re
import time
from types import SimpleNamespace

from benchmarks.env_compare import SIDES, bench_args, compare, play, print_report, start_child
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


def main() -> None:
    args = bench_args(__doc__)
    if args.serve:
        serve_one(args.serve, args.port)
        return
    print_report(*compare({kind: start_child(MODULE, kind, timeout_s=120) for kind in SIDES}, episode, args))


if __name__ == "__main__":
    main()
