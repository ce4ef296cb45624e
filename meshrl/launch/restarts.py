"""Keep a run's services (and its embedded nats-server) alive: Kubernetes' restartPolicy
Always + CrashLoopBackOff on one machine, every restart reported where people look.

    policy = RestartPolicy.from_config(cfg.launch)
    with restart_reports(cfg, run_dir, run_id, nats_url, started=sup.children) as reporter:
        keeper = Keeper(sup, policy, reporter, run_dir=run_dir, argv_for_restart=lambda key, argv: argv)
        rc = keeper.wait_for("learner-0", on_tick=bar.update)   # 0: the learner finished
    with kept_alive(EmbeddedNats(run_dir / "nats"), reporter, policy) as nats:
        ...  # nats.url stays valid across restarts

When (RestartPolicy, RestartHistory; pure): the delay before the n-th restart in a row of
quick crashes is `initial × 2^(n-1)`, capped at `max_delay_s` (1 s, 2 s, 4 s, ...). A
service that ran at least `reset_after_s` before it died was healthy: its streak starts over.
Budget: at most `budget` restarts within any `window_s`; one more death inside the window is
final. Why not tenacity: it retries one blocking call; a supervisor must keep watching every
other child while one waits, so the back-off here is a schedule (a delay to wait), not a loop.

Who (Keeper): any child that exits while the run goes on, even with code 0, is reported and
restarted after its back-off; the others keep running meanwhile. The child awaited by
`wait_for` (the learner) ends the run by exiting 0; any other exit of it is a crash, and its
restart goes through `argv_for_restart` (the launcher adds `--resume RUN_DIR` there). Exit
code 2 is every service's "bad config, data, model or checkpoint" (USER_ERROR_EXIT): a
restart would fail the same way, so it is final at once. A child that exhausts its budget is
final too: `ServiceGaveUp` names it, says why (the tail of its log) and how to continue.

The embedded nats-server (NatsKeeper, `kept_alive`): killed mid-run (OOM killer, kill -9) it
would end the run. On the same port and JetStream store dir the new server recovers every
stream, consumer and KV bucket from disk, and each client reconnects by itself (messages not
yet acked are delivered again). Same rules, same reports (service "nats-server"); a watcher
thread polls the process every `poll_s`; the old log is kept as nats-server.log.<n>.

Where (RestartReporter), for each restart and the final give-up:
  - one line on the console (through tqdm, so the progress bar stays intact);
  - a JSON line in RUN_DIR/restarts.jsonl (service, exit code or signal, how long it ran,
    attempt, back-off, the tail of its log): `meshrl status` shows the count per service
    (meshrl.run.status.restart_counts);
  - 1 more on `meshrl_service_restarts_total{service, replica, run}` (RestartCounter), on the
    launcher's own /metrics endpoint: the launcher is what restarts, so it counts even the
    learner's deaths; the endpoint (a free port) is announced in the run KV under
    `metrics.launcher.0` and printed once; every started service's series is 0 from the start,
    so `increase()` sees the first restart; a `--resume` is a new launcher counting from 0;
  - an alert `service_restart` (warning) or `service_crashloop` (critical) through the
    learner's sinks: the log, RUN_DIR/alerts.jsonl, the webhook when configured, and the run's
    NATS events subject (header `Meshrl-Event: alert`) when NATS is up.
A failing sink is logged, never raised: reporting must not stop the restart it reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import signal
import sys
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from tqdm import tqdm

from meshrl.alerts.sinks import build_sinks
from meshrl.alerts.types import Alert
from meshrl.config.schema import RunConfig
from meshrl.errors import RunFailed
from meshrl.launch.failed_start import how_to_go_on
from meshrl.launch.supervisor import Child, Supervisor, tail_lines
from meshrl.run_layout import RunDir
from meshrl.service.errors import USER_ERROR_EXIT
from meshrl.telemetry.metrics import MetricsHandle, start_metrics
from meshrl.telemetry.service_metrics import announce_metrics, metrics_key
from meshrl.transport.bus import Bus, EmbeddedNats, subjects
from meshrl.transport.bus.errors import BusUnavailable
from meshrl.transport.bus.publish import publish_with_retry

log = logging.getLogger("meshrl.launch")

RESTARTS_METRIC = "meshrl_service_restarts_total"
LAUNCHER = ("launcher", "0")
NATS_KEY = "nats-server"


@dataclass(frozen=True)
class RestartPolicy:
    budget: int = 5
    window_s: float = 600.0
    initial_s: float = 1.0
    max_delay_s: float = 60.0
    reset_after_s: float = 120.0

    @classmethod
    def from_config(cls, launch) -> "RestartPolicy":
        """From `RunConfig.launch` (meshrl.config.launch.LaunchConfig)."""
        return cls(
            budget=launch.restart_budget,
            window_s=launch.restart_window_s,
            initial_s=launch.backoff_initial_s,
            max_delay_s=launch.backoff_max_s,
            reset_after_s=launch.backoff_reset_s,
        )

    def delay_s(self, streak: int) -> float:
        """The wait before restart number `streak` (1-based) of a run of quick crashes."""
        return min(self.initial_s * 2 ** (streak - 1), self.max_delay_s)


@dataclass(frozen=True)
class RestartDecision:
    restart: bool
    delay_s: float = 0.0
    attempt: int = 0  # restarts of this service within the window, this one included
    reason: str = ""  # why not, when restart is False


class RestartHistory:
    """One service's deaths: feeds the streak (back-off) and the window (budget)."""

    def __init__(self, policy: RestartPolicy):
        self.policy = policy
        self.streak = 0  # quick crashes in a row
        self.restarts: deque[float] = deque()  # when each granted restart was decided
        self.total = 0  # restarts over the whole run

    def on_exit(self, *, now: float, ran_for_s: float) -> RestartDecision:
        """The service died at `now` after running `ran_for_s`: restart it, and after how long?"""
        p = self.policy
        while self.restarts and self.restarts[0] <= now - p.window_s:
            self.restarts.popleft()
        if len(self.restarts) >= p.budget:
            return RestartDecision(
                False,
                attempt=len(self.restarts),
                reason=(
                    f"it needed more than launch.restart_budget={p.budget} restarts within "
                    f"launch.restart_window_s={p.window_s:g} s"
                ),
            )
        self.streak = 1 if ran_for_s >= p.reset_after_s else self.streak + 1
        self.restarts.append(now)
        self.total += 1
        return RestartDecision(True, p.delay_s(self.streak), attempt=len(self.restarts))


def split_key(key: str) -> tuple[str, str]:
    """'reward_model-1' -> ('reward_model', '1'): a supervised child's service and replica."""
    service, _, replica = key.rpartition("-")
    return (service, replica) if service else (key, "0")


class RestartCounter:
    """`meshrl_service_restarts_total` on a metrics handle; `add(key)` counts one restart."""

    def __init__(self, handle: MetricsHandle, started: Iterable[str] = ()):
        self.handle = handle
        self.counter = handle.counter(RESTARTS_METRIC, "restarts of a service by the launcher")
        for key in started:  # the series exist at 0 before any restart
            self.add(key, 0)

    def add(self, key: str, n: int = 1) -> None:
        service, replica = split_key(key)
        self.counter.add(n, {"service": service, "replica": replica})


async def _announce(nats_url: str, run_id: str, handle: MetricsHandle, timeout_s: float, *, withdraw: bool) -> None:
    async with await Bus.connect(nats_url, run_id, name="meshrl-launcher", timeout=timeout_s) as bus:
        if withdraw:
            await bus.state.delete(metrics_key(handle.service, handle.replica))
        else:
            await announce_metrics(bus.state, handle)


def announce(nats_url: str, run_id: str, handle: MetricsHandle, timeout_s: float, *, withdraw: bool = False) -> None:
    """Put (or withdraw) the launcher's endpoint in the run KV; best effort, like a service's."""
    try:
        asyncio.run(asyncio.wait_for(_announce(nats_url, run_id, handle, timeout_s, withdraw=withdraw), timeout_s * 2))
    except Exception as err:  # noqa: BLE001 - the entry is advisory; the URL is printed too
        log.warning(
            "launcher: could not %s its metrics endpoint in the run KV: %r", "withdraw" if withdraw else "announce", err
        )


def open_restart_counter(cfg, run_id: str, nats_url: str, started: Iterable[str]) -> RestartCounter | None:
    """The launcher's endpoint with its restart counter (None when telemetry.metrics is off).

    Always on a free port: telemetry.metrics_port is the services' setting, and a fixed one
    is taken by the first process on this host.
    """
    if not cfg.telemetry.metrics:
        return None
    handle = start_metrics(*LAUNCHER, run_id=run_id, port=0)
    tqdm.write(f"meshrl: launcher metrics (service restarts) at {handle.url}", file=sys.stderr)
    announce(nats_url, run_id, handle, cfg.nats.connect_timeout_s)
    return RestartCounter(handle, started)


def close_restart_counter(counter: RestartCounter | None, nats_url: str, run_id: str, timeout_s: float) -> None:
    if counter is None:
        return
    announce(nats_url, run_id, counter.handle, min(timeout_s, 2.0), withdraw=True)  # NATS may be gone
    counter.handle.close()


@contextlib.contextmanager
def restart_reports(
    cfg: RunConfig, run_dir: Path, run_id: str, nats_url: str, started: Iterable[str]
) -> Iterator[RestartReporter]:
    """A RestartReporter counting on the launcher's /metrics endpoint (open for the block, its
    run-KV entry withdrawn after) and alerting through the learner's sinks and NATS."""
    counter = open_restart_counter(cfg, run_id, nats_url, started=started)
    reporter = RestartReporter(cfg, run_dir, run_id, nats_url=nats_url, counter=counter)
    try:
        yield reporter
    finally:
        reporter.close()
        close_restart_counter(counter, nats_url, run_id, cfg.nats.connect_timeout_s)


def describe_exit(returncode: int) -> str:
    """'exited with code 1' / 'was killed by signal SIGKILL'."""
    if returncode < 0:
        return f"was killed by signal {signal.Signals(-returncode).name}"
    return f"exited with code {returncode}"


@dataclass(frozen=True)
class ServiceExit:
    """One death of a supervised service, as the reporter tells it."""

    key: str  # "reward-0"
    returncode: int
    ran_for_s: float
    log_path: Path
    tail: str

    def to_dict(self) -> dict:
        sig = signal.Signals(-self.returncode).name if self.returncode < 0 else None
        return {
            "service": self.key,
            "exit_code": self.returncode if self.returncode >= 0 else None,
            "signal": sig,
            "ran_for_s": round(self.ran_for_s, 3),
            "log": str(self.log_path),
            "tail": self.tail,
        }


def nats_alert_sink(url: str, run_id: str, timeout_s: float = 5.0):
    """A sink that publishes one alert on the run's events subject with a short-lived client
    (restarts are rare, so a connection per alert costs nothing that matters)."""

    async def publish(payload: bytes) -> None:
        bus = await Bus.connect(url, run_id, name="meshrl-launcher", timeout=timeout_s)
        try:
            await publish_with_retry(
                bus.js, subjects.events_subject(run_id), payload, headers={"Meshrl-Event": "alert"}, attempts=2
            )
        finally:
            await bus.close()

    def sink(alert: Alert) -> None:
        asyncio.run(asyncio.wait_for(publish(json.dumps(alert.to_dict()).encode()), timeout_s * 2))

    return sink


class RestartReporter:
    def __init__(
        self,
        cfg: RunConfig,
        run_dir: Path,
        run_id: str,
        nats_url: str | None = None,
        counter: RestartCounter | None = None,
    ):
        self.run_dir, self.run_id, self.counter = Path(run_dir), run_id, counter
        self.path = RunDir(self.run_dir).restarts
        self.sinks = build_sinks(cfg.alerts, run_dir) if cfg.alerts.enabled else []
        if cfg.alerts.enabled and nats_url is not None:
            self.sinks.append(nats_alert_sink(nats_url, run_id, cfg.nats.connect_timeout_s))

    def restarting(self, death: ServiceExit, attempt: int, budget: int, delay_s: float) -> None:
        message = (
            f"{death.key} {describe_exit(death.returncode)} after {death.ran_for_s:.1f} s; "
            f"restart {attempt} of {budget} in {delay_s:g} s (log: {death.log_path})"
        )
        self._record(death, "restart", message, attempt=attempt, budget=budget, delay_s=delay_s)
        if self.counter is not None:
            self.counter.add(death.key)
        self._alert(
            "service_restart", "warning", death, message, {"attempt": attempt, "budget": budget, "delay_s": delay_s}
        )

    def gave_up(self, death: ServiceExit, reason: str) -> None:
        message = f"{death.key} {describe_exit(death.returncode)}; not restarted: {reason}"
        self._record(death, "gave_up", message, reason=reason)
        self._alert("service_crashloop", "critical", death, message, {"reason": reason})

    def _record(self, death: ServiceExit, event: str, message: str, **extra) -> None:
        tqdm.write(f"meshrl: {message}", file=sys.stderr)
        row = {"time": time.time(), "run_id": self.run_id, "event": event, **death.to_dict(), **extra}
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def _alert(self, rule: str, severity: str, death: ServiceExit, message: str, values: dict) -> None:
        alert = Alert(
            rule=rule,
            key=f"{rule}:{death.key}",
            severity=severity,
            action="none",
            message=message,
            step=None,
            time=time.time(),
            run_id=self.run_id,
            values={"service": death.key, "returncode": death.returncode, **values},
        )
        for sink in self.sinks:
            try:
                sink(alert)
            except Exception as err:  # a dead webhook or NATS must not stop the restart
                log.error("launcher: alert sink %r failed for %s: %r", sink, alert.key, err)

    def close(self) -> None:
        """Let background sinks (the webhook's thread) deliver what they hold."""
        for sink in self.sinks:
            if hasattr(sink, "close"):
                sink.close()


class ServiceGaveUp(RunFailed):
    """A service died and will not be restarted (budget spent, or a user error)."""


class Keeper:
    def __init__(
        self,
        sup: Supervisor,
        policy: RestartPolicy,
        reporter: RestartReporter,
        *,
        run_dir: Path,
        run_id: str = "",
        argv_for_restart: Callable[[str, list[str]], list[str]] = lambda k, a: a,
        on_restarted: Callable[[str], None] = lambda key: None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.sup, self.policy, self.reporter = sup, policy, reporter
        self.run_dir, self.run_id, self.argv_for_restart = Path(run_dir), run_id, argv_for_restart
        self.on_restarted, self.clock = on_restarted, clock
        self.histories: dict[str, RestartHistory] = defaultdict(lambda: RestartHistory(policy))
        self.pending: dict[str, float] = {}  # key -> when its restart is due

    def tick(self, ignore: Iterable[str] = ()) -> None:
        """Handle every new death (report, schedule or give up), then start due restarts."""
        now = self.clock()
        for child in self.sup.died(ignore=[*ignore, *self.pending]):
            self._on_death(child, now)
        for key, due in list(self.pending.items()):
            if key in self.sup.finished:  # retired meanwhile (scaled down): not restarted
                del self.pending[key]
            elif now >= due:
                del self.pending[key]
                child = self.sup.children[key]
                self.sup.restart(key, self.argv_for_restart(key, child.argv))
                self.on_restarted(key)

    def wait_for(self, key: str, *, poll_s: float = 0.5, on_tick: Callable[[], None] | None = None) -> int:
        """Until child `key` exits with 0 (returns 0), keeping every child alive meanwhile.
        Raises ServiceGaveUp when a child (`key` included) will not be restarted."""
        while True:
            if on_tick is not None:
                on_tick()
            rc = None if key in self.pending else self.sup.children[key].popen.poll()
            if rc == 0:
                self.sup.finished.add(key)
                return 0
            self.tick(ignore=[key] if rc is None and key not in self.pending else [])
            time.sleep(poll_s)

    def _on_death(self, child: Child, now: float) -> None:
        death = ServiceExit(
            child.key,
            child.popen.returncode,
            child.ran_for_s(now),
            child.log_path,
            tail_lines(child.log_path, self.sup.tail),
        )
        if death.returncode == USER_ERROR_EXIT:
            self._give_up(
                death,
                f"exit code {USER_ERROR_EXIT} means bad config, data, model or "
                f"checkpoint, and a restart would fail the same way",
            )
        decision = self.histories[child.key].on_exit(now=now, ran_for_s=death.ran_for_s)
        if not decision.restart:
            self._give_up(death, decision.reason)
        self.reporter.restarting(death, decision.attempt, self.policy.budget, decision.delay_s)
        self.pending[child.key] = now + decision.delay_s

    def _give_up(self, death: ServiceExit, reason: str) -> None:
        self.reporter.gave_up(death, reason)
        raise ServiceGaveUp(
            f"{death.key} {describe_exit(death.returncode)} and was not restarted: {reason}.\n"
            f"Last lines of {death.log_path}:\n{death.tail or '(log is empty)'}\n"
            f"Fix the cause, then {how_to_go_on(self.run_dir, self.run_id)} (restarts so far: {RunDir(self.run_dir).restarts}; "
            f"launch.restart_budget={self.policy.budget} sets how many are allowed)"
        )


class NatsKeeper:
    def __init__(self, server, reporter: RestartReporter, policy: RestartPolicy, poll_s: float = 0.5):
        self.server, self.reporter, self.policy, self.poll_s = server, reporter, policy, poll_s
        self.history = RestartHistory(policy)
        self.started_at = time.monotonic()
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="nats-keeper", daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_s):
            if not self.server.alive() and not self._restart():
                return  # out of budget: reported; the services' own timeouts end the run

    def _restart(self) -> bool:
        """Report the death; after the back-off start a new server where the old one was."""
        death = self._death()
        decision = self.history.on_exit(now=time.monotonic(), ran_for_s=death.ran_for_s)
        if not decision.restart:
            self.reporter.gave_up(death, decision.reason)
            return False
        self.reporter.restarting(death, decision.attempt, self.policy.budget, decision.delay_s)
        if self._stop.wait(decision.delay_s):
            return False  # the run ended meanwhile
        self._start_again()
        return True

    def _death(self) -> ServiceExit:
        log_path = self.server.store_dir / "nats-server.log"
        returncode = self.server._proc.returncode if self.server._proc is not None else -9
        return ServiceExit(NATS_KEY, returncode, time.monotonic() - self.started_at, log_path, tail_lines(log_path, 20))

    def _start_again(self) -> None:
        self.restarts += 1
        old_log = self.server.store_dir / "nats-server.log"
        self.server.close()
        if old_log.exists():
            old_log.rename(old_log.with_name(f"nats-server.log.{self.restarts}"))
        self.started_at = time.monotonic()
        try:
            self.server = EmbeddedNats(
                self.server.store_dir,
                port=self.server.port,
                extra_config=self.server.extra_config,
                auth=self.server.auth,
                tls=self.server.tls,
            )
        except BusUnavailable:
            pass  # the next poll sees it dead and counts it against the budget

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.server.close()


@contextlib.contextmanager
def kept_alive(server, reporter: RestartReporter, policy: RestartPolicy) -> Iterator[NatsKeeper]:
    """`server`, restarted whenever it dies, for as long as the block runs; closed after."""
    keeper = NatsKeeper(server, reporter, policy)
    keeper._thread.start()
    try:
        yield keeper
    finally:
        keeper.stop()
        reporter.close()
