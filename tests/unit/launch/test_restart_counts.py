"""Restarts are counted: a real child killed with SIGKILL and restarted by the keeper adds 1 to
`meshrl_service_restarts_total{service, replica}` on the launcher's real /metrics endpoint
(announced in a real NATS run KV, withdrawn at the end) and to the count read back from the
restarts.jsonl the real reporter wrote; `meshrl status` shows that count."""

import asyncio
import json
import os
import signal
import sys
import time
import urllib.request

from meshrl.config.load import load_config
from meshrl.launch.restarts import (
    Keeper,
    RestartPolicy,
    RestartReporter,
    close_restart_counter,
    open_restart_counter,
    split_key,
)
from meshrl.launch.supervisor import Supervisor
from meshrl.run.status import restart_counts, restarts_line
from meshrl.transport.bus import Bus

PY = sys.executable
SLEEPER = "import os, time; print('up', os.getpid(), flush=True); time.sleep(600)"
FAST = RestartPolicy(budget=3, window_s=60.0, initial_s=0.05, max_delay_s=0.2, reset_after_s=30.0)
CFG = load_config(base={"model": {"path": "/m"}, "data": {"train": "/d"}})


def scrape(url: str) -> dict[tuple[str, str], float]:
    """(service, replica) -> value of meshrl_service_restarts_total, read over HTTP."""
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("meshrl_service_restarts_total{"):
            labels = dict(part.split("=") for part in line[line.index("{") + 1 : line.index("}")].split(","))
            out[(labels["service"].strip('"'), labels["replica"].strip('"'))] = float(line.rsplit(" ", 1)[1])
    return out


async def kv_entry(nats_url, run_id, key):
    async with await Bus.connect(nats_url, run_id, name="test") as bus:
        await bus.ensure_streams()
        entry = await bus.state.get(key)
    return None if entry is None else json.loads(entry.value)


def kill_and_wait(sup, keeper, key, times):
    for n in range(1, times + 1):
        deadline = time.monotonic() + 20
        while "up " not in sup.children[key].log_path.read_text().split("restart")[-1]:
            assert time.monotonic() < deadline, f"{key} did not come up"
            keeper.tick()
            time.sleep(0.02)
        os.kill(sup.children[key].popen.pid, signal.SIGKILL)
        while sup.children[key].restarts < n:
            assert time.monotonic() < deadline, f"{key} was not restarted"
            keeper.tick()
            time.sleep(0.02)


def test_split_key_names_service_and_replica():
    assert split_key("reward_model-1") == ("reward_model", "1")
    assert split_key("rollout-12") == ("rollout", "12")
    assert split_key("learner") == ("learner", "0")


def test_a_real_restart_is_counted_in_prometheus_and_in_restarts_jsonl(tmp_path, nats_url, run_id):
    asyncio.run(kv_entry(nats_url, run_id, "none"))  # the run's KV bucket exists, as under the launcher
    with Supervisor(tmp_path / "logs") as sup:
        sup.start("reward", [PY, "-c", SLEEPER])
        sup.start("rollout", [PY, "-c", SLEEPER], replica=1)
        counter = open_restart_counter(CFG, run_id, nats_url, started=sup.children)
        try:
            announced = asyncio.run(kv_entry(nats_url, run_id, "metrics.launcher.0"))
            assert announced["url"] == counter.handle.url
            assert scrape(announced["url"]) == {("reward", "0"): 0.0, ("rollout", "1"): 0.0}
            keeper = Keeper(sup, FAST, RestartReporter(CFG, tmp_path, run_id, counter=counter), run_dir=tmp_path)
            kill_and_wait(sup, keeper, "rollout-1", times=2)
            assert scrape(counter.handle.url) == {("reward", "0"): 0.0, ("rollout", "1"): 2.0}
        finally:
            close_restart_counter(counter, nats_url, run_id, CFG.nats.connect_timeout_s)
    assert asyncio.run(kv_entry(nats_url, run_id, "metrics.launcher.0")) is None  # withdrawn
    assert restart_counts(tmp_path) == {"rollout-1": 2}
    assert restarts_line(restart_counts(tmp_path)) == "restarts: rollout-1 ×2"


def test_counts_skip_a_cut_line_and_give_ups_and_say_none_without_a_file(tmp_path):
    assert restart_counts(tmp_path) == {} and restarts_line({}) == "restarts: none"
    rows = [
        {"event": "restart", "service": "reward-0"},
        {"event": "gave_up", "service": "reward-0"},
        {"event": "restart", "service": "learner-0"},
    ]
    (tmp_path / "restarts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"event": "rest')
    assert restart_counts(tmp_path) == {"learner-0": 1, "reward-0": 1}


def test_metrics_off_means_no_launcher_endpoint(nats_url, run_id):
    cfg = load_config(base={"model": {"path": "/m"}, "data": {"train": "/d"}, "telemetry": {"metrics": False}})
    assert open_restart_counter(cfg, run_id, nats_url, started=["reward-0"]) is None
    close_restart_counter(None, nats_url, run_id, 1.0)  # nothing to close
