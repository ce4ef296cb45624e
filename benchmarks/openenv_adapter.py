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

import time

from benchmarks.env_compare import SIDES, bench_args, compare, play, print_report, start_child, tree_rss_mb
from meshrl.env_sdk import Environment, Reset, Step, serve
from tests.fixtures.adapters import adapter_python
from tests.services.environment.adapters.openenv_servers import guess_server

MODULE = "benchmarks.openenv_adapter"


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


def main() -> None:
    args = bench_args(__doc__, url="")
    if args.serve:
        serve_one(args.serve, args.port, args.url)
        return
    with guess_server(adapter_python("openenv")) as (server, url):
        children = {kind: start_child(MODULE, kind, ["--url", url], timeout_s=120) for kind in SIDES}
        runs, memory = compare(children, episode, args)
        memory["openenv server"] = tree_rss_mb(server.pid)
    print_report(runs, memory)


if __name__ == "__main__":
    main()
