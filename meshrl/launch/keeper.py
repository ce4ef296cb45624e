"""Keep a run's services alive: restart each dead child with back-off, within its budget.

    keeper = Keeper(sup, RestartPolicy.from_config(cfg.launch), reporter, run_dir=run_dir,
                    argv_for_restart=lambda key, argv: argv)
    rc = keeper.wait_for("learner-0", on_tick=bar.update)   # 0: the learner finished

Kubernetes' restartPolicy Always + CrashLoopBackOff on one machine (`restart_policy.py` says
when): any child that exits while the run goes on, even with code 0, is reported and
restarted after its back-off; the others keep running meanwhile. The child awaited by
`wait_for` (the learner) ends the run by exiting 0; any other exit of it is a crash, and its
restart goes through `argv_for_restart` (the launcher adds `--resume RUN_DIR` there).

Exit code 2 is every service's "bad config, data, model or checkpoint": a restart would fail
the same way, so it is final at once. A child that exhausts its budget is final too:
`ServiceGaveUp` names it, says why (the tail of its log) and how to continue.
"""
from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Iterable

from meshrl.errors import RunFailed
from meshrl.launch.logtail import tail_lines
from meshrl.launch.restart_policy import RestartHistory, RestartPolicy
from meshrl.launch.restart_report import RestartReporter, ServiceExit, describe_exit
from meshrl.launch.supervisor import Child, Supervisor
from meshrl.service.errors import USER_ERROR_EXIT


class ServiceGaveUp(RunFailed):
    """A service died and will not be restarted (budget spent, or a user error)."""


class Keeper:
    def __init__(self, sup: Supervisor, policy: RestartPolicy, reporter: RestartReporter, *,
                 run_dir: Path, argv_for_restart: Callable[[str, list[str]], list[str]] = lambda k, a: a,
                 on_restarted: Callable[[str], None] = lambda key: None,
                 clock: Callable[[], float] = time.monotonic):
        self.sup, self.policy, self.reporter = sup, policy, reporter
        self.run_dir, self.argv_for_restart = Path(run_dir), argv_for_restart
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

    def wait_for(self, key: str, *, poll_s: float = 0.5,
                 on_tick: Callable[[], None] | None = None) -> int:
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
        death = ServiceExit(child.key, child.popen.returncode, child.ran_for_s(now), child.log_path,
                            tail_lines(child.log_path, self.sup.tail))
        if death.returncode == USER_ERROR_EXIT:
            self._give_up(death, f"exit code {USER_ERROR_EXIT} means bad config, data, model or "
                                 f"checkpoint, and a restart would fail the same way")
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
            f"Fix the cause, then continue the run from its newest checkpoint with "
            f"`meshrl train --resume {self.run_dir}` (restarts so far: {self.run_dir / 'restarts.jsonl'}; "
            f"launch.restart_budget={self.policy.budget} sets how many are allowed)")
