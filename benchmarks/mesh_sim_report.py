"""What benchmarks/mesh_sim.py reports: the ledger check, hop latencies, NATS memory/storage.

- `check_ledger`: every group id published was gathered (trained) or dead-lettered, and
  none was gathered twice; the ledger is the learner's own (services/learner/ledger.py).
- `hop_latencies`: from the timestamps the group carries (task.created_unix, the
  "generate" and "reward" StageTimings) and the time the gatherer received it.
- `nats_stats`: RSS of the nats-server process (psutil) and JetStream memory/storage
  from its monitoring port (/varz, /jsz).
- `sustained_per_min`, `saturated`: the capacity measured — groups gathered per minute
  after the warm-up, and whether the feed was above it (the feeder held back by its
  in-flight bound on most ticks: the mesh, not the feed, set the rate).
"""

from __future__ import annotations

import json
import urllib.request
from collections import Counter

import numpy as np
import psutil

from meshrl.transport.bus import subjects as names

HOPS = ("prompts->generated", "generated->ready", "ready->gathered", "end-to-end")


def check_ledger(events: list[dict], dead_ids: set[str]) -> dict:
    published = {e["group_id"] for e in events if e["event"] == "published"}
    trained = Counter(e["group_id"] for e in events if e["event"] == "trained")
    lost = published - set(trained) - dead_ids
    twice = sorted(gid for gid, n in trained.items() if n > 1)
    return {
        "published": len(published),
        "trained": len(trained),
        "dead_lettered": len(dead_ids & published),
        "lost": len(lost),
        "twice": len(twice),
        "ok": not lost and not twice,
        "lost_ids": sorted(lost)[:10],
        "twice_ids": twice[:10],
    }


def group_hops(group, received_unix: float) -> dict[str, float]:
    """Seconds spent on each hop by one group (the first timing of each stage counts)."""
    ends = {}
    for timing in group.timings:
        ends.setdefault(timing.stage, timing.end_unix)
    created = group.task.created_unix
    gen, rew = ends.get("generate", created), ends.get("reward", created)
    return {
        "prompts->generated": gen - created,
        "generated->ready": rew - gen,
        "ready->gathered": received_unix - rew,
        "end-to-end": received_unix - created,
    }


def percentiles(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    out = {}
    for hop in HOPS:
        values = np.asarray(samples.get(hop) or [float("nan")])
        out[hop] = {
            "p50_ms": float(np.percentile(values, 50) * 1000),
            "p99_ms": float(np.percentile(values, 99) * 1000),
            "max_ms": float(values.max() * 1000),
        }  # the max shows the groups a killed replica held
    return out


def _monitor(port: int, path: str) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
        return json.loads(resp.read())


def nats_stats(pid: int, monitor_port: int) -> dict:
    jsz, varz = _monitor(monitor_port, "/jsz"), _monitor(monitor_port, "/varz")
    try:
        rss = psutil.Process(pid).memory_info().rss
    except psutil.Error:
        rss = 0
    return {
        "rss_mib": rss / 2**20,
        "varz_mem_mib": varz.get("mem", 0) / 2**20,
        "js_memory_mib": jsz.get("memory", 0) / 2**20,
        "js_storage_mib": jsz.get("storage", 0) / 2**20,
        "cpu_s": _cpu_seconds(pid),
    }


def _cpu_seconds(pid: int) -> float:
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return t.user + t.system


async def dead_group_ids(js, run_id: str) -> set[str]:
    """Group ids of every dead letter of the run (their Nats-Msg-Id is dead.<stage>.<group id>)."""
    stream = names.dead_stream(run_id)
    info = await js.stream_info(stream)
    ids = set()
    for seq in range(info.state.first_seq, info.state.last_seq + 1) if info.state.messages else ():
        raw = await js.get_msg(stream, seq)
        msg_id = (raw.headers or {}).get("Nats-Msg-Id", "")
        ids.add(msg_id.split(".", 2)[-1])
    return ids


def sustained_per_min(gather_times: list[float], start: float, end: float) -> float:
    """Groups gathered per minute between `start` and `end` (monotonic seconds)."""
    if end <= start:
        return 0.0
    return sum(start <= t <= end for t in gather_times) / (end - start) * 60.0


SATURATED_SHARE = 0.5  # of the ticks after warm-up: the feed was held back more often than not


def saturated(held_back_ticks: int, ticks: int) -> bool:
    """The mesh, not the feed, set the rate: its in-flight bound held the feeder back on most
    ticks, so groups waited for the mesh, and the rate gathered is its capacity."""
    return ticks > 0 and held_back_ticks / ticks >= SATURATED_SHARE
