"""When to restart a dead service, and when to give up: Kubernetes' CrashLoopBackOff, pure.

    policy = RestartPolicy.from_config(cfg.launch)
    history = RestartHistory(policy)
    decision = history.on_exit(now=time.monotonic(), ran_for_s=12.0)
    # RestartDecision(restart=True, delay_s=1.0, attempt=1, reason="")

Delay before the n-th restart in a row of quick crashes: `initial × 2^(n-1)`, capped at
`max_delay_s` (1 s, 2 s, 4 s, ...). A service that ran at least `reset_after_s` before it
died was healthy: its streak starts over (the next wait is `initial` again). Budget: at most
`budget` restarts within any `window_s`; one more death inside the window is final.

Why not tenacity: it retries one blocking call; a supervisor must keep watching every other
child while one waits, so the back-off here is a schedule (a delay to wait), not a loop.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass


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
        return cls(budget=launch.restart_budget, window_s=launch.restart_window_s,
                   initial_s=launch.backoff_initial_s, max_delay_s=launch.backoff_max_s,
                   reset_after_s=launch.backoff_reset_s)

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
            return RestartDecision(False, attempt=len(self.restarts), reason=(
                f"it needed more than launch.restart_budget={p.budget} restarts within "
                f"launch.restart_window_s={p.window_s:g} s"))
        self.streak = 1 if ran_for_s >= p.reset_after_s else self.streak + 1
        self.restarts.append(now)
        self.total += 1
        return RestartDecision(True, p.delay_s(self.streak), attempt=len(self.restarts))
