"""The reward path to an external reward service: throughput, added latency, recovery.

Starts examples/external_reward/server.py (a real process on a real port: the Python SDK,
keyword + length score) and measures, from this process:

  items/s        1,000-item Score calls through ExternalComponent (mapping, breaker,
                 retries, concurrency limit 4), and the same requests on a bare stub (the
                 floor: protobuf + gRPC + the service itself);
  added latency  per group: GroupScorer.score_group on an 8-sample group with a cheap rule
                 (length_penalty) alone, then with the external component beside it
                 (components run concurrently, so the difference is the external call);
  recovery       SIGKILL the service, keep scoring every 50 ms through the outage, restart it
                 on the same port; time from its return (its port accepts a connection) to
                 the first OK score, for ExternalComponent (fast reconnect + breaker probe
                 on a new channel) and for a plain open_channel stub (gRPC's default
                 reconnect back-off, what external calls used before).

    .venv/bin/python benchmarks/reward_path.py [--batches 20] [--groups 50] [--outage-s 10]

Simplification: client and service share the machine's cores, so items/s is a lower bound
of what a separate service host gives; figures vary with the machine's other load.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

from meshrl.addresses import free_port
from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.components import build_components
from meshrl.services.reward.external import ExternalComponent, check_reachable, to_score_item
from meshrl.services.reward.scorer import GroupScorer
from meshrl.services.reward.types import RewardItem
from meshrl.transport.rpc import open_channel

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "external_reward" / "server.py"
RESPONSE = "The answer is 7 because 3 + 4 = 7. " * 8  # ~300 chars, a typical short math answer


def start_service(port: int) -> subprocess.Popen:
    cmd = [sys.executable, str(EXAMPLE), "--port", str(port), "--keywords", "answer,because", "--max-chars", "400"]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.05).close()
        return True
    except OSError:
        return False


def items(n: int, tag: str) -> list[RewardItem]:
    return [RewardItem(id=f"{tag}/{i}", response=RESPONSE, prompt="What is 3+4?", ground_truth="7") for i in range(n)]


def component(address: str, **cfg) -> ExternalComponent:
    return ExternalComponent.from_config(
        RewardComponentConfig(name="judge", kind="external", address=address, **{"timeout_s": 30.0, **cfg}),
        run_id="bench",
    )


async def throughput(address: str, batches: int) -> tuple[float, float]:
    """items/s through ExternalComponent and on a bare stub, 1,000-item calls, 4 in flight."""
    comp = component(address, batch_size=1000, max_concurrency=4)
    await comp.score(items(1000, "warm"))
    t0 = time.perf_counter()
    await asyncio.gather(*(comp.score(items(1000, f"b{b}")) for b in range(batches)))
    via_component = batches * 1000 / (time.perf_counter() - t0)
    await comp.close()
    limit = asyncio.Semaphore(4)
    async with open_channel(address) as channel:
        stub = reward_pb2_grpc.RewardServiceStub(channel)

        async def one(b: int):
            request = reward_pb2.ScoreRequest(component="judge", items=[to_score_item(i) for i in items(1000, f"s{b}")])
            async with limit:
                await stub.Score(request, timeout=30.0)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(b) for b in range(batches)))
        bare = batches * 1000 / (time.perf_counter() - t0)
    return via_component, bare


def group(i: int) -> common_pb2.Group:
    task = common_pb2.PromptTask(group_id=f"g{i}", prompt_text="What is 3+4?", ground_truth="7")
    return common_pb2.Group(
        group_id=f"g{i}", task=task, samples=[common_pb2.Sample(index=k, response_text=RESPONSE) for k in range(8)]
    )


async def group_latency(address: str, groups: int) -> tuple[list[float], list[float]]:
    """score_group wall times (s): rule alone, then rule + external."""
    rule = RewardComponentConfig(name="len", kind="length_penalty", params={"max_len": 400})
    ext = RewardComponentConfig(name="judge", kind="external", address=address, timeout_s=30.0)
    out = []
    for cfgs in ([rule], [rule, ext]):
        scorer = GroupScorer(build_components(cfgs, "bench"))
        await scorer.score_group(group(-1))
        times = []
        for i in range(groups):
            t0 = time.perf_counter()
            await scorer.score_group(group(i))
            times.append(time.perf_counter() - t0)
        await scorer.close()
        out.append(times)
    return out[0], out[1]


async def first_ok(score, stop_at: float) -> float | None:
    """Poll `score()` every 50 ms; the monotonic time of the first OK, or None by stop_at."""
    while time.monotonic() < stop_at:
        if await score():
            return time.monotonic()
        await asyncio.sleep(0.05)
    return None


async def recovery(
    port: int, proc: subprocess.Popen, outage_s: float
) -> tuple[subprocess.Popen, float | None, float | None]:
    """Seconds from the service's return to the first OK score: (ExternalComponent, plain stub)."""
    address = f"127.0.0.1:{port}"
    comp = component(address, timeout_s=2.0)
    plain = open_channel(address)
    stub = reward_pb2_grpc.RewardServiceStub(plain)
    probe = items(1, "r")

    async def via_component() -> bool:
        return (await comp.score(probe))[0].ok

    async def via_plain() -> bool:
        try:
            await stub.Score(reward_pb2.ScoreRequest(items=[to_score_item(probe[0])]), timeout=2.0)
            return True
        except Exception:  # noqa: BLE001 - any failure means "not yet"
            return False

    assert await via_component() and await via_plain()
    proc.kill()
    proc.wait()
    down_until = time.monotonic() + outage_s
    while time.monotonic() < down_until:  # both clients keep calling through the outage
        await asyncio.gather(via_component(), via_plain())
        await asyncio.sleep(0.05)
    proc = start_service(port)
    while not accepts(port):
        await asyncio.sleep(0.005)
    returned = time.monotonic()
    comp_ok, plain_ok = await asyncio.gather(first_ok(via_component, returned + 60), first_ok(via_plain, returned + 60))
    await comp.close()
    await plain.close()
    return proc, *(None if t is None else t - returned for t in (comp_ok, plain_ok))


def ms(values: list[float], q: float) -> float:
    return 1000 * statistics.quantiles(values, n=100)[int(q) - 1]


async def main(args) -> None:
    port = free_port()
    proc = start_service(port)
    try:
        address = f"127.0.0.1:{port}"
        await check_reachable(component(address), within_s=30.0)
        via_component, bare = await throughput(address, args.batches)
        print(
            f"items/s, 1,000-item batches ×{args.batches}, 4 in flight: ExternalComponent {via_component:,.0f}, "
            f"bare stub {bare:,.0f} (call-path overhead {100 * (1 - via_component / bare):.1f} %)"
        )
        rule_only, with_ext = await group_latency(address, args.groups)
        print(
            f"group of 8, score_group p50/p95: rule alone {ms(rule_only, 50):.2f}/{ms(rule_only, 95):.2f} ms, "
            f"+ external {ms(with_ext, 50):.2f}/{ms(with_ext, 95):.2f} ms "
            f"(added p50 {ms(with_ext, 50) - ms(rule_only, 50):.2f} ms)"
        )
        proc, comp_s, plain_s = await recovery(port, proc, args.outage_s)
        fmt = lambda s: "none within 60 s" if s is None else f"{s:.2f} s"  # noqa: E731
        print(
            f"after a {args.outage_s:g} s outage (SIGKILL, restart on the same port), return → first OK score: "
            f"ExternalComponent {fmt(comp_s)}, plain open_channel stub {fmt(plain_s)}"
        )
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=20, help="1,000-item batches timed")
    parser.add_argument("--groups", type=int, default=50, help="groups timed per configuration")
    parser.add_argument("--outage-s", type=float, default=10.0, help="how long the service stays down")
    asyncio.run(main(parser.parse_args()))
