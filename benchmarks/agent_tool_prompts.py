"""How often SmolLM2-135M-Instruct calls the calculator well, per prompt design (issue 20).

Before training a model to use a tool, the task needs a learning signal: some episodes of
a group must call the tool well and answer right, others not. This plays real episodes of
the tool task (`tool_arith`, served by `python -m meshrl.services.environment` on a real
port) on a real vLLM engine through the rollout's own episode code (services/rollout/agent),
once per prompt design, and reports per design: the share of first turns with a tool call,
of calls that were well-formed (sent), of episodes answered right (env reward 1), and of
groups with mixed rewards (GRPO learns only from those).

Designs (the system message; the rollout appends the Hermes tools block to it):
  bare      nothing but the tools block
  rule      "Use the calculator for arithmetic, then give the number."
  example   the rule plus one worked example of a call, the tool's answer and the final answer
  fewshot   the rule, and the worked example as earlier turns of the conversation (user,
            assistant's call, tool's answer, assistant's answer) before the question
  fewshot1  one such example, the call on one line
  fewshot2  two such examples, each call on one line

    .venv/bin/python -m benchmarks.agent_tool_prompts [--model DIR] [--prompts 16] [--group 4]
        [--designs bare,rule,example] [--digits 3] [--ops '*']

Simplifications: one seed, greedy-free sampling at temperature 1; few prompts (the machine
has 2 cores); the figures are for the model and settings printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter

import numpy as np

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.inputs.data.arithmetic import TOOL_RULE, TOOL_SHOTS, TOOL_TEMPLATE, arithmetic_rows, tool_shot
from meshrl.inputs.models.fetch import fetch_smollm2
from meshrl.services.rollout.agent.chat_format import ChatFormat
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.episode import EpisodeContext, EpisodeLimits
from meshrl.services.rollout.agent.group import AgentRollout
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.engine import EngineConfig, RolloutEngine
from meshrl.transport.rpc import wait_healthy

RULE = TOOL_RULE
EXAMPLE = (
    RULE + "\n\nExample:\nuser: What is 12*34?\nassistant: <tool_call>\n"
    '{"name": "calculator", "arguments": {"expression": "12*34"}}\n</tool_call>\n'
    "tool: 408\nassistant: 12*34 = 408"
)
DESIGNS = {"bare": "", "rule": RULE, "example": EXAMPLE, "fewshot": RULE, "fewshot1": RULE, "fewshot2": RULE}
# `fewshot`: the worked example as earlier turns of the conversation instead of text
FEWSHOT = [
    {"role": "user", "content": "What is 12*34? You may use the calculator tool. Answer with a number."},
    {
        "role": "assistant",
        "content": '<tool_call>\n{"name": "calculator", "arguments": {"expression": "12*34"}}\n</tool_call>',
    },
    {"role": "tool", "content": "408"},
    {"role": "assistant", "content": "408"},
]

# `fewshot1` / `fewshot2`: what `meshrl data arithmetic --tool --tool-shots 1|2` writes
SHOTS = {
    "fewshot": FEWSHOT,
    "fewshot1": tool_shot(*TOOL_SHOTS[0]),
    "fewshot2": tool_shot(*TOOL_SHOTS[0]) + tool_shot(*TOOL_SHOTS[1]),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_environment(port: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "meshrl.services.environment", "--port", str(port), "--environments", "tool_arith"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def tasks(rows: list[dict], design: str, group: int, seed: int, temperature: float) -> list[pb.PromptTask]:
    out = []
    for i, row in enumerate(rows):
        shots = SHOTS.get(design, [])
        messages = ([pb.ChatMessage(role="system", content=DESIGNS[design])] if DESIGNS[design] else []) + [
            pb.ChatMessage(role=m["role"], content=m["content"]) for m in shots + row["prompt"]
        ]
        out.append(
            pb.PromptTask(
                run_id="bench",
                group_id=f"{design}-{i}",
                environment="tool_arith",
                prompt_messages=messages,
                ground_truth_json=json.dumps(row["reward_model"]["ground_truth"]),
                sampling=pb.SamplingParams(n=group, temperature=temperature, max_tokens=64, seed=seed + i),
            )
        )
    return out


def summarize(groups: list[pb.Group]) -> dict:
    samples = [s for g in groups for s in g.samples]
    first = [s.turns[0] for s in samples if s.turns]
    calls = [c for s in samples for t in s.turns for c in t.tool_calls]
    rewards = [np.array([s.env_reward for s in g.samples]) for g in groups if g.samples]
    return {
        "episodes": len(samples),
        "dropped_groups": sum(1 for g in groups if g.drop_reason),
        "first_turn_calls": sum(1 for t in first if t.tool_calls) / max(1, len(first)),
        "calls": len(calls),
        "well_formed": sum(1 for c in calls if not c.error) / max(1, len(calls)),
        "accuracy": float(np.mean([s.env_reward for s in samples])) if samples else 0.0,
        "mixed_groups": sum(1 for r in rewards if r.min() != r.max()) / max(1, len(rewards)),
        "turns": float(np.mean([len(s.turns) for s in samples])) if samples else 0.0,
        "errors": Counter(c.error.split(" (")[0].split(";")[0][:60] for c in calls if c.error).most_common(3),
    }


async def measure(args) -> None:
    model = args.model or str(fetch_smollm2())
    port = free_port()
    env = start_environment(port)
    engine = None
    try:
        await wait_healthy(f"127.0.0.1:{port}", timeout=60)
        engine = await RolloutEngine.start(EngineConfig(model=model, max_model_len=1024, kv_cache_gb=1.0))
        client = EnvironmentClient(EnvClientSettings(addresses=(f"127.0.0.1:{port}",), timeout_s=30))
        chat = ChatFormat(engine.tokenizer, get_tool_parser("hermes"), 64)
        rollout = AgentRollout(
            EpisodeContext(engine, client, chat, EpisodeLimits(max_turns=3, max_episode_tokens=256, max_model_len=1024))
        )
        rows = arithmetic_rows(args.prompts, digits=args.digits, ops=args.ops, seed=args.seed, template=TOOL_TEMPLATE)
        print(
            f"model {model}; {args.prompts} prompts ({args.digits}-digit, ops {args.ops!r}) x {args.group} episodes, "
            f"T={args.temperature:g}, max 3 turns of 64 tokens"
        )
        for design in args.designs.split(","):
            began = time.perf_counter()
            groups = await asyncio.gather(
                *(rollout.generate_group(t) for t in tasks(rows, design, args.group, args.seed, args.temperature))
            )
            report = summarize(groups)
            for sample in [s for g in groups for s in g.samples][: args.show]:
                print(f"  [{design}] " + " | ".join(repr(t.text[:120]) for t in sample.turns), flush=True)
            print(
                json.dumps({"design": design, **report, "seconds": round(time.perf_counter() - began, 1)}), flush=True
            )
        await client.aclose()
    finally:
        if engine is not None:
            engine.shutdown()
        env.terminate()
        env.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a HF model dir (default: SmolLM2-135M-Instruct, fetched)")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--designs", default="bare,rule,example")
    parser.add_argument("--digits", type=int, default=3)
    parser.add_argument("--ops", default="*")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--show", type=int, default=0, help="print the turns of this many episodes per design")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
