"""Multi-turn rollout throughput and the environment hop (issue 20's "Measure"), on the tiny model.

The rollout's own episode code (services/rollout/agent) on a real vLLM engine in this process,
against 1 and then 2 replicas of the real environment service (`python -m
meshrl.services.environment --environments calculator`, each its own process on its own
port). The calculator never ends an episode, so every episode runs `--turns` turns.

  1. throughput: `--groups` groups × `--n` episodes at once, per replica count: episodes/s,
     turns/s, and the environment hop (each Step's wall time: Turn.env_latency_s) p50/p99;
  2. a killed replica: with 2 replicas, `kill -9` one while groups are in flight; groups keep
     being started (one every 0.2 s) — how many episodes were dropped (their group's
     drop_reason) and the seconds from the kill to the first group that finished whole after it.

    .venv/bin/python -m benchmarks.agent_rollout [--groups 8] [--n 4] [--turns 4] [--max-tokens 8]

Simplifications: the tiny random model (a long-context build: the calculator's tools block is
~830 one-character tokens); the engine in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0);
one run per figure on a shared 2-core host: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.agent_tool_prompts import free_port
from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.inputs.models.tiny import build_tiny_model_dir
from meshrl.services.rollout.agent.chat_format import ChatFormat
from meshrl.services.rollout.agent.env_client import EnvClientSettings, EnvironmentClient
from meshrl.services.rollout.agent.episode import EpisodeContext, EpisodeLimits
from meshrl.services.rollout.agent.group import AgentRollout
from meshrl.services.rollout.agent.parsers import get_tool_parser
from meshrl.services.rollout.engine import EngineConfig, RolloutEngine
from meshrl.transport.rpc import wait_healthy

MAX_MODEL_LEN = 1200


def start_replica() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "meshrl.services.environment", "--port", str(port), "--environments", "calculator"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return proc, f"127.0.0.1:{port}"


def task(i: int, args) -> pb.PromptTask:
    return pb.PromptTask(
        run_id="bench",
        group_id=f"g{i}",
        environment="calculator",
        prompt_text="What is 2+2?",
        sampling=pb.SamplingParams(n=args.n, temperature=1.0, max_tokens=args.max_tokens, seed=i + 1),
    )


def rollout_for(engine, addresses: list[str], args) -> AgentRollout:
    client = EnvironmentClient(EnvClientSettings(addresses=tuple(addresses), timeout_s=10.0))
    chat = ChatFormat(engine.tokenizer, get_tool_parser("hermes"), 16)
    return AgentRollout(
        EpisodeContext(
            engine,
            client,
            chat,
            EpisodeLimits(max_turns=args.turns, max_episode_tokens=400, max_model_len=MAX_MODEL_LEN),
        )
    )


async def throughput(engine, addresses: list[str], args) -> dict:
    rollout = rollout_for(engine, addresses, args)
    await rollout.generate_group(task(10_000, args))  # warm: first requests, channels
    began = time.perf_counter()
    groups = await asyncio.gather(*(rollout.generate_group(task(i, args)) for i in range(args.groups)))
    seconds = time.perf_counter() - began
    await rollout.aclose()
    samples = [s for g in groups for s in g.samples]
    hops = np.array([t.env_latency_s for s in samples for t in s.turns]) * 1000
    return {
        "env_replicas": len(addresses),
        "episodes": len(samples),
        "dropped_groups": sum(bool(g.drop_reason) for g in groups),
        "seconds": round(seconds, 1),
        "episodes_per_s": round(len(samples) / seconds, 2),
        "turns_per_s": round(hops.size / seconds, 2),
        "env_hop_ms_p50": round(float(np.percentile(hops, 50)), 2),
        "env_hop_ms_p99": round(float(np.percentile(hops, 99)), 2),
        "load_avg": round(os.getloadavg()[0], 1),
    }


async def killed_replica(engine, args) -> dict:
    (victim, a), (survivor, b) = start_replica(), start_replica()
    try:
        for address in (a, b):
            await wait_healthy(address, timeout=60)
        rollout = rollout_for(engine, [a, b], args)
        started: list[tuple[float, asyncio.Task]] = []

        async def keep_starting(until: float) -> None:
            i = 0
            while time.perf_counter() < until:
                started.append(
                    (time.perf_counter(), asyncio.create_task(rollout.generate_group(task(20_000 + i, args))))
                )
                i += 1
                await asyncio.sleep(0.2)

        feeder = asyncio.create_task(keep_starting(time.perf_counter() + args.kill_window_s))
        await asyncio.sleep(args.kill_window_s / 3)
        victim.send_signal(signal.SIGKILL)
        killed_at = time.perf_counter()
        await feeder
        results = [(t0, await t, time.perf_counter()) for t0, t in started]
        await rollout.aclose()
    finally:
        for proc in (victim, survivor):
            proc.kill()
            proc.wait(10)
    dropped = [g for _, g, _ in results if g.drop_reason]
    whole_after = [t0 for t0, g, _ in results if t0 > killed_at and not g.drop_reason]
    return {
        "groups": len(results),
        "groups_dropped": len(dropped),
        "episodes_dropped": len(dropped) * args.n,
        "drop_reasons": sorted({g.drop_reason.split(":")[0] for g in dropped}),
        "seconds_to_first_whole_group_started_after_kill": round(min(whole_after) - killed_at, 2)
        if whole_after
        else None,
        "load_avg": round(os.getloadavg()[0], 1),
    }


async def measure(args) -> None:
    model = build_tiny_model_dir(tempfile.mkdtemp(prefix="tiny-long-"), max_positions=2048)
    engine = await RolloutEngine.start(EngineConfig(model=str(model), max_model_len=MAX_MODEL_LEN, kv_cache_gb=1.0))
    try:
        for count in (1, 2):
            replicas = [start_replica() for _ in range(count)]
            try:
                for _, address in replicas:
                    await wait_healthy(address, timeout=60)
                print(json.dumps(await throughput(engine, [a for _, a in replicas], args)), flush=True)
            finally:
                for proc, _ in replicas:
                    proc.kill()
                    proc.wait(10)
        print(json.dumps({"killed_replica": await killed_replica(engine, args)}), flush=True)
    finally:
        engine.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=8)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=8)
    parser.add_argument("--kill-window-s", type=float, default=12.0)
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
