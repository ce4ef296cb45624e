"""What the verifiers adapter costs: the same tool task played through meshrl's environment SDK
natively, and through the adapter running a verifiers ToolEnv in its library worker child.

    .venv/bin/python -m benchmarks.verifiers_adapter [--episodes 200] [--concurrency 8] [--rounds 3]

Needs the verifiers venv with the test environments installed (tests/fixtures/verifiers_envs:
`verifiers_python()` builds and installs them). Two servers on 127.0.0.1, each its own
process: one serving the adapter for `meshrl_vf_calc` (a vf.ToolEnv with an `add` tool, rubric
correct_answer x 1.0 + used_tool x 0.5), one serving `NativeCalc`, the same task written with
meshrl.env_sdk. A gRPC client plays `--episodes` episodes on each, `--concurrency` at once:
Reset (dataset row i), Step 0 a call add(a, b), Step 1 the right answer (reward 1.5 checked),
Close. Reported per server: Step latency p50/p99 seen by the client, episodes/s, and the
resident memory (RSS) of the serving process after the rounds (the adapter's plus its child's).
Each figure is the median over `--rounds` rounds, the two servers interleaved in each round.
Simplified: plaintext gRPC, no token (both alike); the first episodes warm both and are counted.
"""

from __future__ import annotations

import asyncio
import json
import re
import time

from benchmarks.env_compare import SIDES, bench_args, compare, print_report, start_child
from meshrl.api.env.v1 import env_pb2
from meshrl.env_sdk import Environment, Step, start
from meshrl.env_sdk.messages import to_proto
from tests.fixtures.verifiers_envs import calc_prompt, verifiers_python

MODULE = "benchmarks.verifiers_adapter"

ROWS = 16


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class NativeCalc(Environment):
    """meshrl_vf_calc natively: the add tool, then the answer scored correct x 1.0 + used_tool x 0.5."""

    name = "calc"
    tools = [add]

    def reset(self, task):
        self.answer, self.used = str(task.ground_truth), False

    def step(self, turn):
        if turn.tool_calls:
            self.used = True
            return Step(self.call_tools(turn))
        found = re.findall(r"<answer>\s*(.*?)\s*</answer>", turn.text)
        correct = 1.0 if found and found[-1] == self.answer else 0.0
        return Step(reward=correct + 0.5 * self.used, done=True)


async def serve_one(kind: str, port: int, python: str) -> None:
    """The child's work: serve the adapter or the native task on `port` until killed."""
    if kind == "native":
        served = {"calc": NativeCalc}
    else:
        from meshrl.config.environment import EnvironmentConfig  # lazy: only the adapter's child
        from meshrl.services.environment.adapters.verifiers.start import start_verifiers

        block = {"module": "meshrl_vf_calc", "args": {"n": ROWS}, "python": python}
        served = {"calc": await start_verifiers(EnvironmentConfig(name="calc", verifiers=block))}
    server, _ = await start(served, port=port)  # kept: a collected server stops serving
    await server.wait_for_termination()


def operands(i: int) -> tuple[int, int]:
    return 100 * (i + 1) + 7, 37 * i + 58


async def episode(stub, i: int, latencies: list[float]) -> None:
    eid, row = f"b{time.monotonic_ns()}/{i}", i % ROWS
    a, b = operands(row)
    reset = env_pb2.ResetRequest(
        episode_id=eid, environment="calc", prompt_messages=[to_proto(m) for m in calc_prompt(row)],
        ground_truth_json=json.dumps(str(a + b)), extra_json=json.dumps({"verifiers": {"row": row}}),
    )  # fmt: skip
    await stub.Reset(reset, timeout=60)
    call = env_pb2.ToolCall(id=f"call_0_{i}", name="add", arguments_json=json.dumps({"a": a, "b": b}))
    turns = [("calling add", [call]), (f"<answer>{a + b}</answer>", [])]
    for turn, (text, calls) in enumerate(turns):
        start_s = time.perf_counter()
        request = env_pb2.StepRequest(episode_id=eid, turn=turn, text=text, tool_calls=calls)
        answer = await stub.Step(request, timeout=60)
        latencies.append(time.perf_counter() - start_s)
    assert answer.done and answer.reward == 1.5, answer
    await stub.Close(env_pb2.CloseRequest(episode_id=eid), timeout=60)


def main() -> None:
    args = bench_args(__doc__, python="")
    if args.serve:
        asyncio.run(serve_one(args.serve, args.port, args.python))
        return
    python = verifiers_python()
    children = {kind: start_child(MODULE, kind, ["--python", python]) for kind in SIDES}
    print_report(*compare(children, episode, args))


if __name__ == "__main__":
    main()
