"""The mesh at cluster scale, by simulation: the bus and the gather under load, replicas killed.

    .venv/bin/python -m benchmarks.mesh_sim --minutes 10 --rollouts 16 --rewards 4 --kill-every 30

Starts a real nats-server (EmbeddedNats, monitoring port on), creates a run's streams, and
runs `--rollouts` simulated rollout replicas and `--rewards` reward replicas as separate
processes (benchmarks/mesh_sim_replica.py: the real RolloutWorker with a FakeEngine that
returns canned token ids after --gen-ms, the real RewardWorker with the exact_match rule).
This process is the learner's side: a feeder publishes PromptTasks at `--rate` groups a
minute (`max`, the default: as fast as the in-flight bound allows; at most --max-in-flight
unsettled, like the learner's feeder), and a gatherer pulls `ready` with the learner's
durable, writes the learner's ledger (published / trained) and acks. Every `--kill-every` s
a random replica is SIGKILLed and a new one started.

What it measures is the capacity: the rate the mesh sustains when fed above it. The report
gives the groups gathered per minute after the warm-up (`--warmup-s`), the rate fed, and
whether the feed was above capacity (the in-flight bound held the feeder back on most ticks
after the warm-up: then the mesh set the rate). A run fed below capacity says so — its
rate is the feed's, and the capacity is higher — and names the fix (a higher --rate).
At the end (after a drain of up to --drain-s) it also prints p50/p99 of each hop, CPU
seconds per process kind, NATS memory and storage, and the ledger check (every published
group gathered or dead-lettered, none gathered twice); exit 1 if that fails.

Simplifications: no model, no training, no reference (generated → ready directly), one
policy version; every process shares this machine's cores, so groups/min is what this
machine sustains, not what a cluster would.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

import nats.js.errors
import psutil

from benchmarks.mesh_sim_fleet import Fleet
from benchmarks.mesh_sim_report import (
    check_ledger,
    dead_group_ids,
    group_hops,
    nats_stats,
    percentiles,
    saturated,
    sustained_per_min,
)
from meshrl.addresses import free_port
from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.services.learner.ledger import Ledger, read_ledger
from meshrl.transport.bus import Bus, EmbeddedNats
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.codec import pack_int32

PROMPT_TOKENS = pack_int32(list(range(1, 65)))


class Sim:
    """The learner's side of the simulation: feeder, gatherer, ledger, latencies."""

    def __init__(self, bus: Bus, ledger: Ledger, args):
        self.bus, self.ledger, self.args = bus, ledger, args
        self.published, self.gathered, self.redelivered = 0, 0, 0
        self.gather_times: list[float] = []  # monotonic, one per group gathered
        self.ticks = self.held_back = 0  # feed ticks after the warm-up; those the bound held back
        self.seen: set[str] = set()
        self.hops: dict[str, list[float]] = defaultdict(list)
        self.feeding = True

    def task(self, draw: int) -> pb.PromptTask:
        return pb.PromptTask(
            run_id=self.bus.run_id,
            group_id=f"g{draw:08d}-{uuid.uuid4().hex[:6]}",
            prompt_text="what is six times seven?",
            prompt_token_ids=PROMPT_TOKENS,
            sampling=pb.SamplingParams(n=self.args.group_size, max_tokens=32),
            ground_truth="42" if draw % 2 == 0 else "41",
            dataset_index=draw,
            created_unix=time.time(),
        )

    async def publish_one(self) -> None:
        task = self.task(self.published)
        self.published += 1
        self.ledger.published(task.group_id, 0, draw=task.dataset_index)
        await self.bus.publish("prompts", task, msg_id=task.group_id)

    async def feed(self, seconds: float) -> None:
        """Publish at --rate groups/min in 0.1 s ticks, never more than --max-in-flight
        unsettled; counts the ticks after the warm-up on which the bound held the feed back."""
        per_tick, t0, due, tick = self.args.rate / 600.0, time.monotonic(), 0.0, 0
        while time.monotonic() - t0 < seconds:
            due = min(due + per_tick, float(self.args.max_in_flight))
            room = self.args.max_in_flight - (self.published - self.gathered)
            n = max(0, min(int(due), room))
            if time.monotonic() - t0 >= self.args.warmup_s:
                self.ticks += 1
                self.held_back += n < int(due)
            due -= int(due)  # what the in-flight bound held back is skipped, not caught up later
            await asyncio.gather(*(self.publish_one() for _ in range(n)))
            tick += 1
            await asyncio.sleep(max(0.0, t0 + 0.1 * tick - time.monotonic()))
        self.feeding = False

    async def gather(self) -> None:
        while True:
            for msg in await self.bus.pull("ready", "learner", max_msgs=256, timeout=1.0, ack_wait=30.0):
                self.receive(msg.message)
                await msg.ack()

    def receive(self, group: pb.Group) -> None:
        if group.group_id in self.seen:
            self.redelivered += 1  # the learner acks and ignores a group it already has
            return
        self.seen.add(group.group_id)
        self.gathered += 1
        self.gather_times.append(time.monotonic())
        for hop, seconds in group_hops(group, time.time()).items():
            self.hops[hop].append(seconds)
        self.ledger.trained(group, step=0)


async def kill_loop(fleet: Fleet, every: float) -> None:
    while every > 0:
        await asyncio.sleep(every)
        victim, new = fleet.kill_random()
        print(f"  t+{time.monotonic() - START:6.1f}s  SIGKILL {victim}, started {new}", flush=True)


async def watch(fleet: Fleet, sim: Sim, nats: EmbeddedNats, monitor_port: int, peak: dict) -> None:
    """Every 5 s: CPU samples, peak NATS memory, a progress line."""
    while True:
        await asyncio.sleep(5)
        fleet.sample()
        stats = await asyncio.to_thread(nats_stats, nats._proc.pid, monitor_port)
        for key in ("rss_mib", "js_memory_mib", "js_storage_mib"):
            peak[key] = max(peak.get(key, 0.0), stats[key])
        print(
            f"  t+{time.monotonic() - START:6.1f}s  published {sim.published}  gathered {sim.gathered}  "
            f"nats rss {stats['rss_mib']:.0f} MiB  storage {stats['js_storage_mib']:.1f} MiB",
            flush=True,
        )


async def drain(sim: Sim, dead, limit_s: float) -> float:
    """Wait until every published group is gathered or dead-lettered (or limit_s passes);
    `dead()` returns the dead-lettered group ids."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if sim.gathered + len(await dead()) >= sim.published:
            break
        await asyncio.sleep(0.5)
    return time.monotonic() - t0


START = time.monotonic()


async def waiting_pulls(js, run_id: str, stage: str, durable: str) -> int:
    try:
        return (await js.consumer_info(names.stage_stream(run_id, stage), durable)).num_waiting
    except nats.js.errors.NotFoundError:
        return 0


async def wait_ready(bus: Bus, args, fleet: Fleet, limit_s: float = 120.0) -> float:
    """Until every replica has a pull request waiting (started, connected, consuming)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit_s:
        if fleet.dead_early():
            raise RuntimeError(f"replicas {fleet.dead_early()} exited at start-up: see their logs in {fleet.log_dir}")
        if (
            await waiting_pulls(bus.js, bus.run_id, "prompts", "rollout") >= args.rollouts
            and await waiting_pulls(bus.js, bus.run_id, "generated", "reward") >= args.rewards
        ):
            return time.monotonic() - t0
        await asyncio.sleep(0.5)
    raise RuntimeError(f"the replicas did not all start consuming within {limit_s:.0f} s: see {fleet.log_dir}")


async def simulate(args) -> dict:
    """Run the whole simulation; returns the report (also printed by main)."""
    out = Path(args.out or tempfile.mkdtemp(prefix="mesh_sim-"))
    out.mkdir(parents=True, exist_ok=True)
    monitor_port = free_port("127.0.0.1")
    nats = EmbeddedNats(out / "nats", extra_config=f"http: 127.0.0.1:{monitor_port}")
    fleet = None
    try:
        run_id = f"sim{uuid.uuid4().hex[:8]}"
        bus = await Bus.connect(nats.url, run_id, name="mesh-sim-learner")
        await bus.ensure_streams()
        fleet = Fleet(nats.url, run_id, args, out)
        fleet.start_all(args.rollouts, args.rewards)
        startup_s = await wait_ready(bus, args, fleet)
        print(
            f"  {args.rollouts} rollout + {args.rewards} reward replicas consuming after {startup_s:.1f} s", flush=True
        )
        ledger = Ledger(out / "groups.jsonl")
        report = await _run(args, bus, nats, fleet, ledger, monitor_port)
        ledger.close()
        report["ledger"] = check_ledger(read_ledger(out / "groups.jsonl"), await dead_group_ids(bus.js, run_id))
        report["out_dir"] = str(out)
        await bus.close()
        return report
    finally:
        if fleet is not None:
            fleet.stop()
        nats.close()


async def _run(args, bus, nats, fleet, ledger, monitor_port) -> dict:
    global START
    sim, peak, seconds = Sim(bus, ledger, args), {}, args.minutes * 60
    START = time.monotonic()
    tasks = [
        asyncio.create_task(c)
        for c in (sim.gather(), kill_loop(fleet, args.kill_every), watch(fleet, sim, nats, monitor_port, peak))
    ]
    await sim.feed(seconds)
    fed_s = time.monotonic() - START
    published_while_fed = sim.published
    tasks[1].cancel()  # no kills during the drain
    drain_s = await drain(sim, lambda: dead_group_ids(bus.js, bus.run_id), args.drain_s)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    fleet.sample()
    final = nats_stats(nats._proc.pid, monitor_port)
    return {
        "fed_s": fed_s,
        "drain_s": drain_s,
        "published": sim.published,
        "gathered": sim.gathered,
        "redelivered_to_gather": sim.redelivered,
        "sustained_per_min": sustained_per_min(sim.gather_times, START + args.warmup_s, START + fed_s),
        "fed_per_min": published_while_fed / fed_s * 60,
        "target_per_min": args.rate,
        "saturated": saturated(sim.held_back, sim.ticks),
        "held_back_share": sim.held_back / max(sim.ticks, 1),
        "warmup_s": args.warmup_s,
        "latency": percentiles(sim.hops),
        "cpu_s": {**fleet.cpu_by_kind(), "nats-server": final["cpu_s"], "learner-side (feeder+gather)": _own_cpu()},
        "nats": {**final, "peak": peak},
        "killed": fleet.killed,
        "crashed": fleet.dead_early(),
    }


def _own_cpu() -> float:
    t = psutil.Process().cpu_times()
    return t.user + t.system


def print_report(r: dict) -> None:
    verdict = (
        f"fed above capacity (the in-flight bound held the feed back on "
        f"{r['held_back_share']:.0%} of the ticks): this is the capacity measured"
        if r["saturated"]
        else f"NOT a capacity: fed below it (held back on only {r['held_back_share']:.0%} of the "
        f"ticks), the mesh kept up with the feed; rerun with a higher --rate (or --rate max)"
    )
    print(
        f"\nsustained: {r['sustained_per_min']:.0f} groups/min gathered after the {r['warmup_s']:.0f} s "
        f"warm-up, fed {r['fed_per_min']:.0f}/min (target {r['target_per_min']:.0f}) over {r['fed_s']:.0f} s; "
        f"{verdict}"
    )
    print(f"published {r['published']}, gathered {r['gathered']}, drain {r['drain_s']:.1f} s")
    for hop, p in r["latency"].items():
        print(f"  {hop:20s} p50 {p['p50_ms']:9.1f} ms   p99 {p['p99_ms']:9.1f} ms   max {p['max_ms']:9.1f} ms")
    print("CPU seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in r["cpu_s"].items()))
    n = r["nats"]
    print(
        f"NATS: rss {n['rss_mib']:.0f} MiB (peak {n['peak'].get('rss_mib', 0):.0f}), JetStream memory "
        f"{n['js_memory_mib']:.1f} MiB, storage {n['js_storage_mib']:.1f} MiB (peak "
        f"{n['peak'].get('js_storage_mib', 0):.1f})"
    )
    print(f"killed {len(r['killed'])} replicas; crashed on their own: {r['crashed'] or 'none'}")
    print("ledger: " + json.dumps(r["ledger"]))


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--minutes", type=float, default=10.0, help="how long the feeder publishes")
    p.add_argument("--rollouts", type=int, default=16)
    p.add_argument("--rewards", type=int, default=4)
    p.add_argument(
        "--rate",
        type=rate,
        default="max",
        help="groups per minute to feed; max (default): as fast as the in-flight bound allows",
    )
    p.add_argument(
        "--warmup-s",
        type=float,
        default=None,
        help="s excluded from the sustained rate (default: 10 %% of the feed, at most 30 s)",
    )
    p.add_argument("--kill-every", type=float, default=30.0, help="s between SIGKILLs of a random replica; 0 = none")
    p.add_argument("--gen-ms", type=float, default=50.0, help="FakeEngine time per group")
    p.add_argument("--group-size", type=int, default=4, help="samples per group")
    p.add_argument("--max-in-flight", type=int, default=2000, help="unsettled groups the feeder allows")
    p.add_argument("--ack-wait", type=float, default=6.0, help="s before a killed replica's work is redelivered")
    p.add_argument("--drain-s", type=float, default=60.0, help="max s to wait for in-flight groups at the end")
    p.add_argument("--seed", type=int, default=0, help="which replicas get killed")
    p.add_argument("--out", help="directory for the ledger, NATS data and replica logs (default: a temp dir)")
    args = p.parse_args(argv)
    if args.rollouts < 1 or args.rewards < 1 or args.rate <= 0 or args.minutes <= 0:
        p.error("--rollouts and --rewards must be >= 1, --rate and --minutes > 0")
    if args.warmup_s is None:
        args.warmup_s = min(30.0, args.minutes * 6.0)
    if not 0 <= args.warmup_s < args.minutes * 60:
        p.error(f"--warmup-s={args.warmup_s} must be >= 0 and shorter than the feed ({args.minutes * 60:.0f} s)")
    return args


def rate(text: str) -> float:
    """--rate: groups per minute, or `max` (unbounded: the in-flight bound is the only limit)."""
    return float("inf") if text == "max" else float(text)


def main(argv=None) -> int:
    report = asyncio.run(simulate(parse_args(argv)))
    print_report(report)
    return 0 if report["ledger"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
