"""What the gateway adds: status and metric-stream latency with 10 runs and 5 clients, and
the gateway's memory.

    .venv/bin/python -m benchmarks.gateway [--live-run RUN_DIR] [--seconds 30]

Starts `meshrl gateway serve` (a subprocess) on a fresh runs root of 10 runs. Each run's
metrics.jsonl gets a row every 0.5 s from a writer here, stamped with its write time (a
learner writes one per step: 1-3 s on this machine). With --live-run, a running `meshrl
train` run dir is linked in as the first run, and the 9 others borrow its NATS and learner
(their status calls reach a real learner, rollout and NATS: 10 runs' worth of status load on
one mesh); without it their services are closed ports. 5 clients, like 5 open dashboards, each follow all 10 runs' metric streams over
server-sent events and ask every run's status every 2 s. Printed:

- metric stream delay: from the row's write to a client's receipt (p50/p95/max over every
  row × client); most of it is the gateway's 0.5 s poll of the file;
- status over HTTP per call (p50/p95) for the synthetic runs and for the live run, and for the
  live run the same status gathered directly in this process during the same load (what the
  gateway does for a call, without HTTP, auth and JSON): the difference is the gateway's added latency;
- the gateway's resident memory at start and at the end (psutil; its threads and gRPC included).

Simplified: one machine, loopback HTTP, clients and writer in this process's event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import psutil

from meshrl.addresses import free_port
from meshrl.gateway.runs.status import live_status
from meshrl.run.presence import find_launcher

TOKEN = "bench-token-0123456789abcdef"
RUNS, CLIENTS = 10, 5


def pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else (values or [float("nan")])[0]


def presence(live_run: Path | None) -> dict:
    """A launcher.json for a synthetic run: this process's pid (so the gateway takes the run
    for live and follows its files) and the live run's NATS, run id and learner when given
    (so its status is a real one), else closed ports (status reports them unreachable)."""
    if live_run:
        info = json.loads((live_run / "launcher.json").read_text())
        return {**info, "pid": os.getpid()}
    return {
        "pid": os.getpid(),
        "run_id": "bench",
        "nats_url": f"nats://127.0.0.1:{free_port()}",
        "learner_grpc": f"127.0.0.1:{free_port()}",
        "replicas": {},
    }


def make_root(root: Path, live_run: Path | None) -> list[str]:
    names = []
    if live_run:
        (root / "live").symlink_to(live_run.resolve())
        names.append("live")
    for i in range(RUNS - len(names)):
        (root / f"run-{i}").mkdir()
        (root / f"run-{i}" / "config.yaml").write_text("run: {name: bench}\n")
        (root / f"run-{i}" / "launcher.json").write_text(json.dumps(presence(live_run)))
        if live_run:  # the live run's NATS admits its admin credential only
            (root / f"run-{i}" / "secrets").symlink_to((live_run / "secrets").resolve())
        names.append(f"run-{i}")
    return names


async def writer(root: Path, names: list[str], stop: asyncio.Event) -> None:
    step = 0
    while not stop.is_set():
        for name in names:
            if name != "live":
                with open(root / name / "metrics.jsonl", "a") as fh:
                    fh.write(json.dumps({"step": step, "reward": 0.5, "bench_written": time.time()}) + "\n")
        step += 1
        await asyncio.sleep(0.5)


async def follow(session, name: str, delays: list[float], stop: asyncio.Event) -> None:
    async with session.get(f"/api/runs/{name}/metrics?follow=1") as r:
        async for line in r.content:
            if stop.is_set():
                return
            if line.startswith(b'data: {"index'):
                written = json.loads(line[6:])["row"].get("bench_written")
                if written:
                    delays.append(time.time() - written)


async def poll_status(session, names: list[str], times: dict, stop: asyncio.Event) -> None:
    while not stop.is_set():
        for name in names:
            t0 = time.perf_counter()
            async with session.get(f"/api/runs/{name}/status") as r:
                await r.read()
            times["live" if name == "live" else "synthetic"].append(time.perf_counter() - t0)
        await asyncio.sleep(2)


async def direct_status(live_run: Path, out: list[float], stop: asyncio.Event) -> None:
    """The live run's status gathered here, every 2 s during the same load."""
    while not stop.is_set():
        t0 = time.perf_counter()
        await live_status(find_launcher(live_run), live_run)
        out.append(time.perf_counter() - t0)
        await asyncio.sleep(2)


async def clients(port: int, root: Path, names: list[str], seconds: float, live_run: Path | None):
    stop, delays, times = asyncio.Event(), [], {"live": [], "synthetic": [], "direct": []}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    sessions = [aiohttp.ClientSession(f"http://127.0.0.1:{port}", headers=headers) for _ in range(CLIENTS)]
    tasks = [asyncio.create_task(writer(root, names, stop))]
    if live_run:
        tasks.append(asyncio.create_task(direct_status(live_run, times["direct"], stop)))
    for s in sessions:
        tasks += [asyncio.create_task(follow(s, n, delays, stop)) for n in names]
        tasks.append(asyncio.create_task(poll_status(s, names, times, stop)))
    await asyncio.sleep(seconds)
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for s in sessions:
        await s.close()
    return delays, times


def start_gateway(root: Path, tokens: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "meshrl.cli.main",
            "gateway",
            "serve",
            "--runs-root",
            str(root),
            "--port",
            str(port),
            "--grpc-port",
            str(free_port()),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MESHRL_GATEWAY_TOKENS_FILE": str(tokens)},
    )
    assert proc.stdout.readline().startswith("gateway: "), "the gateway did not start"
    return proc, port


def report(delays, times, rss_start, rss_end) -> None:
    direct = times["direct"]
    print(f"gateway with {RUNS} runs, {CLIENTS} clients (each: {RUNS} metric streams + status of every run / 2 s)")
    print(
        f"metric stream delay (write → client): p50 {pct(delays, 50) * 1e3:.0f} ms  p95 {pct(delays, 95) * 1e3:.0f} ms  "
        f"max {max(delays) * 1e3:.0f} ms  ({len(delays)} rows received)"
    )
    print(
        f"status, synthetic runs over HTTP: p50 {pct(times['synthetic'], 50) * 1e3:.1f} ms  "
        f"p95 {pct(times['synthetic'], 95) * 1e3:.1f} ms ({len(times['synthetic'])} calls)"
    )
    if direct:
        live, base = pct(times["live"], 50), pct(direct, 50)
        print(
            f"status, live run over HTTP: p50 {live * 1e3:.1f} ms  p95 {pct(times['live'], 95) * 1e3:.1f} ms "
            f"({len(times['live'])} calls); gathered directly: p50 {base * 1e3:.1f} ms → gateway adds {(live - base) * 1e3:.1f} ms"
        )
    print(f"gateway resident memory: {rss_start / 2**20:.0f} MiB at start, {rss_end / 2**20:.0f} MiB at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--live-run", type=Path, help="the run dir of a running `meshrl train`")
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, tokens = Path(tmp) / "runs", Path(tmp) / "tokens.yaml"
        root.mkdir()
        tokens.write_text(f"tokens:\n  - {{name: bench, role: viewer, token: {TOKEN}}}\n")
        names = make_root(root, args.live_run)
        proc, port = start_gateway(root, tokens)
        try:
            rss_start = psutil.Process(proc.pid).memory_info().rss
            delays, times = asyncio.run(clients(port, root, names, args.seconds, args.live_run))
            rss_end = psutil.Process(proc.pid).memory_info().rss
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(10)
    report(delays, times, rss_start, rss_end)


if __name__ == "__main__":
    main()
