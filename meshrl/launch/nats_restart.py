"""Keep the run's embedded nats-server alive: restart it on the same port and store dir.

    with kept_alive(EmbeddedNats(run_dir / "nats"), reporter, policy) as nats:
        ...  # nats.url stays valid across restarts

A nats-server killed mid-run (OOM killer, kill -9) would otherwise end the run: every
service and the learner wait on it. On the same port and JetStream store dir the new server
recovers every stream, consumer and KV bucket from disk, and each client reconnects by
itself (the bus connects with unlimited reconnects): messages not yet acked are delivered
again, so nothing is lost. Restarts follow the services' rules (`launch.*`: back-off and
budget, restart_policy.py) and are reported the same way (console, RUN_DIR/restarts.jsonl as
service "nats-server", alert `service_restart`).

Simplifies: a watcher thread polls the process every `poll_s`; the old server's log is kept
as nats-server.log.<n> (a new server truncates nats-server.log).
"""
from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from meshrl.launch.logtail import tail_lines
from meshrl.launch.restart_policy import RestartHistory, RestartPolicy
from meshrl.launch.restart_report import RestartReporter, ServiceExit
from meshrl.transport.bus import EmbeddedNats
from meshrl.transport.bus.errors import BusUnavailable

NATS_KEY = "nats-server"


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
        return ServiceExit(NATS_KEY, returncode, time.monotonic() - self.started_at, log_path,
                           tail_lines(log_path, 20))

    def _start_again(self) -> None:
        self.restarts += 1
        old_log = self.server.store_dir / "nats-server.log"
        self.server.close()
        if old_log.exists():
            old_log.rename(old_log.with_name(f"nats-server.log.{self.restarts}"))
        self.started_at = time.monotonic()
        try:
            self.server = EmbeddedNats(self.server.store_dir, port=self.server.port,
                                       extra_config=self.server.extra_config, auth=self.server.auth,
                                       tls=self.server.tls)
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
