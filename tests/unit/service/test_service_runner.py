"""The shared service runner (meshrl.service) with a tiny fake service (fake_service.py)
as a real process on a real nats-server: what SIGTERM, start-up errors and failures do to
the exit code, stderr, the clean-ups and the run KV entries.

Run: .venv/bin/python -m pytest tests/unit/service -q
"""

import argparse
import asyncio
import re
import signal
import sys
from pathlib import Path

import pytest
import yaml

from meshrl.service import ServiceContext, ServiceProcess, Stopper, serve
from meshrl.service.args import parse_service_args
from meshrl.telemetry.service_metrics import metrics_key
from meshrl.transport.bus.registry import service_key
from tests.fixtures.ports import refused_port

FAKE = Path(__file__).with_name("fake_service.py")
REPLICA = "fake-7"
TIMEOUT_S = 60  # a fresh interpreter importing meshrl and nats on a loaded 2-core box


def write_config(tmp_path: Path, **sections) -> Path:
    config = {
        "run": {"dir": str(tmp_path / "run")},
        "model": {"path": "unused"},
        "data": {"train": "unused.jsonl"},
        "telemetry": {"tracing": False},
        **sections,
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


async def start_fake(nats_url: str, run_id: str, tmp_path: Path, *flags: str, config: Path | None = None):
    config = config or write_config(tmp_path)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(FAKE),
        "--nats",
        nats_url,
        "--run-id",
        run_id,
        "--config",
        str(config),
        "--replica-id",
        REPLICA,
        "--journal",
        str(tmp_path / "journal"),
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def wait_for_line(proc, prefix: str) -> None:
    while True:
        line = (await asyncio.wait_for(proc.stdout.readline(), TIMEOUT_S)).decode()
        if line.startswith(prefix):
            return
        if not line:
            raise AssertionError(f"exited before {prefix}: {(await proc.stderr.read()).decode()}")


async def finish(proc) -> tuple[int, str]:
    _, err = await asyncio.wait_for(proc.communicate(), TIMEOUT_S)
    return proc.returncode, err.decode()


def journal(tmp_path: Path) -> list[str]:
    path = tmp_path / "journal"
    return path.read_text().splitlines() if path.exists() else []


async def test_sigterm_exits_0_after_undoing_every_part_and_withdrawing_its_kv_entries(bus, nats_url, run_id, tmp_path):
    proc = await start_fake(nats_url, run_id, tmp_path)
    await wait_for_line(proc, "READY")
    entry = await bus.state.get(service_key("fake", REPLICA))
    assert entry.json()["grpc"] == "127.0.0.1:45678"
    assert (await bus.state.get(metrics_key("fake", REPLICA))).json()["url"].startswith("http://127.0.0.1:")
    proc.send_signal(signal.SIGTERM)
    rc, err = await finish(proc)
    assert rc == 0, err
    assert journal(tmp_path) == ["prepare", "start", "work", "work ended", "undo start", "undo prepare"]
    assert await bus.state.get(service_key("fake", REPLICA)) is None
    assert await bus.state.get(metrics_key("fake", REPLICA)) is None
    phases = re.findall(rf"{REPLICA}: stop: (.+?) (?:ended|done) in \d+\.\d\d s$", err, re.MULTILINE)
    assert phases[:6] == [
        "work",
        f"forget_key(services.fake.{REPLICA})",
        "FakeProcess.note(undo start)",
        f"forget_key(metrics.fake.{REPLICA})",
        "Bus.close",
        "FakeProcess.note(undo prepare)",
    ]  # each phase of the stop named with its time, last registered first
    assert phases[-1] == "shutdown_tracing" and err.rstrip().endswith("fake service: exiting")


async def test_a_config_error_exits_2_with_one_line_naming_service_and_key(nats_url, run_id, tmp_path):
    config = write_config(tmp_path, learner={"stepz": 3})
    rc, err = await finish(await start_fake(nats_url, run_id, tmp_path, config=config))
    assert rc == 2
    assert err.startswith("fake service: ") and "stepz" in err and "Traceback" not in err
    assert journal(tmp_path) == []  # failed before any of the service's own parts


async def test_sigterm_after_nats_went_away_stops_within_seconds(run_id, tmp_path):
    """compose may stop NATS before the services: withdrawing the KV entries must not hold the
    stop (each waited 45 s, so a runtime's 30 s SIGTERM grace ended in a SIGKILL)."""
    from meshrl.transport.bus import Bus
    from meshrl.transport.bus.server import EmbeddedNats

    server = EmbeddedNats(tmp_path / "own-nats")
    try:
        async with await Bus.connect(server.url, run_id, name="t") as bus:
            await bus.ensure_streams()
        proc = await start_fake(server.url, run_id, tmp_path)
        await wait_for_line(proc, "READY")
    finally:
        server.close()
    began = asyncio.get_running_loop().time()
    proc.send_signal(signal.SIGTERM)
    rc, err = await finish(proc)
    took = asyncio.get_running_loop().time() - began
    assert rc == 0 and "could not remove services.fake.fake-7 from the run KV" in err, err
    assert took < 30, f"stop took {took:.0f} s after NATS went away"  # a runtime's SIGTERM grace; was 2 × 45 s


async def test_unreachable_nats_exits_2_after_undoing_what_prepare_did(run_id, tmp_path):
    with refused_port() as port:
        rc, err = await finish(await start_fake(f"nats://127.0.0.1:{port}", run_id, tmp_path))
    assert rc == 2 and err.startswith("fake service: ") and "cannot reach NATS" in err, err
    assert journal(tmp_path) == ["prepare", "undo prepare"]


@pytest.mark.parametrize(
    "hook, ran",
    [("prepare", ["prepare", "undo prepare"]), ("start", ["prepare", "start", "undo start", "undo prepare"])],
)
async def test_a_connection_error_while_starting_exits_2_naming_it(bus, nats_url, run_id, tmp_path, hook, ran):
    rc, err = await finish(await start_fake(nats_url, run_id, tmp_path, "--fail-in", hook))
    assert rc == 2 and "Traceback" not in err
    assert err.strip().endswith(f"fake service: made-up dependency at 127.0.0.1:1 is not reachable (in {hook})")
    assert journal(tmp_path) == ran


async def test_the_same_error_once_working_is_a_failure_exit_1_and_still_cleans_up(bus, nats_url, run_id, tmp_path):
    rc, err = await finish(await start_fake(nats_url, run_id, tmp_path, "--fail-in", "work"))
    assert rc == 1 and "Traceback" in err and "ConnectionError: made-up dependency" in err
    assert journal(tmp_path) == ["prepare", "start", "work", "undo start", "undo prepare"]
    assert await bus.state.get(service_key("fake", REPLICA)) is None


async def test_a_signal_during_start_up_stops_at_once(nats_url, run_id, tmp_path):
    proc = await start_fake(nats_url, run_id, tmp_path, "--hang-in", "prepare")
    await wait_for_line(proc, "PREPARING")
    proc.send_signal(signal.SIGTERM)
    rc, err = await finish(proc)
    assert rc == 0, err
    assert journal(tmp_path) == ["prepare", "undo prepare"]


async def test_a_service_started_before_its_run_waits_for_it_then_serves(nats_url, run_id, tmp_path):
    from meshrl.transport.bus import Bus

    proc = await start_fake(nats_url, run_id, tmp_path)
    line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT_S)).decode()
    while "waiting for run" not in line:
        assert line, "exited without waiting for the run"
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT_S)).decode()
    assert f"waiting for run '{run_id}' to exist on NATS (its learner creates the streams)" in line
    async with await Bus.connect(nats_url, run_id, name="the-learner") as learner:
        await learner.ensure_streams()  # what the learner does when it starts
        await wait_for_line(proc, "READY")
        proc.send_signal(signal.SIGTERM)
        rc, err = await finish(proc)
    assert rc == 0, err
    assert journal(tmp_path) == ["prepare", "start", "work", "work ended", "undo start", "undo prepare"]


async def test_a_run_that_never_appears_exits_2_naming_the_run_id(nats_url, run_id, tmp_path):
    config = write_config(tmp_path, nats={"run_wait_s": 1})
    rc, err = await finish(await start_fake(nats_url, run_id, tmp_path, config=config))
    assert rc == 2 and "Traceback" not in err
    assert (
        f"fake service: run '{run_id}' has no streams on NATS after 1 s: is its learner running with "
        f"--run-id {run_id} against the same NATS? (nats.run_wait_s sets how long services wait)" in err
    )
    assert journal(tmp_path) == ["prepare", "undo prepare"]


def test_an_empty_run_id_is_refused_naming_the_flag(capsys):
    with pytest.raises(SystemExit) as exited:
        parse_service_args(ServiceProcess(), ["--nats", "nats://x:1", "--run-id", "", "--config", "c.yaml"])
    assert exited.value.code == 2 and "argument --run-id: is empty" in capsys.readouterr().err


class GracefulProcess(ServiceProcess):
    """Work that, once asked to stop, ends by itself (what the learner does)."""

    name = "graceful"
    creates_the_run = True  # these tests make no run streams: nothing to wait for

    def __init__(self):
        self.events, self.finish = [], asyncio.Event()

    async def start(self, ctx: ServiceContext) -> None:
        ctx.on_stop(self.events.append, "undo start")

    async def work(self, ctx: ServiceContext) -> None:
        await self.finish.wait()
        await asyncio.sleep(0.05)  # the last step's checkpoint
        self.events.append("work finished")

    def stop_gracefully(self, reason: str) -> bool:
        self.events.append(f"asked to stop: {reason}")
        self.finish.set()
        return True


def serve_args(nats_url: str, run_id: str, tmp_path: Path) -> argparse.Namespace:
    config = write_config(tmp_path, telemetry={"tracing": False, "metrics": False})
    return argparse.Namespace(nats=nats_url, run_id=run_id, config=str(config), replica_id=None)


async def test_a_graceful_service_finishes_its_work_before_the_clean_ups(nats_url, run_id, tmp_path):
    process, stopper = GracefulProcess(), Stopper()
    service = asyncio.create_task(serve(process, serve_args(nats_url, run_id, tmp_path), stopper))
    while not stopper.working:
        await asyncio.sleep(0.01)
    stopper.request("SIGTERM")
    await asyncio.wait_for(service, 10)
    assert process.events == ["asked to stop: SIGTERM", "work finished", "undo start"]


async def test_work_that_ends_by_itself_ends_the_service(nats_url, run_id, tmp_path):
    process = GracefulProcess()
    process.finish.set()  # the learner's last step is done
    await asyncio.wait_for(serve(process, serve_args(nats_url, run_id, tmp_path), Stopper()), 10)
    assert process.events == ["work finished", "undo start"]
