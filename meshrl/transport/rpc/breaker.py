"""A circuit breaker for one remote service: stop calling it while it is down.

    breaker = CircuitBreaker(failures=5, cooldown_s=5.0)
    breaker.check()            # raises BreakerOpen while open (fail fast, no call made)
    ... call ...
    breaker.record(ok=True)    # or ok=False after a failed call (retries already spent)

States: CLOSED (calls go through) → after `failures` failed calls in a row → OPEN (every
call fails at once with BreakerOpen, for `cooldown_s`) → HALF_OPEN: exactly one probe call
goes through while the others still fail fast; its success closes the breaker, its failure
opens it for another cool-down. `on_half_open` runs as the probe starts (the caller uses it
to recreate its gRPC channel, so the probe does not wait out the channel's reconnect
back-off). Not thread-safe: one asyncio loop owns it.

Simplification: a hand-written state machine (pybreaker is sync-only); the clock is
injectable so tests step through the states without sleeping.
"""

from __future__ import annotations

import enum
import time
from typing import Callable


class BreakerState(enum.IntEnum):
    """The numbers are the `meshrl_reward_external_breaker_state` gauge's values."""

    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


class BreakerOpen(RuntimeError):
    """A call refused without being made: the service failed repeatedly and is cooling down."""


class CircuitBreaker:
    def __init__(
        self,
        failures: int,
        cooldown_s: float,
        *,
        name: str = "service",
        clock: Callable[[], float] = time.monotonic,
        on_half_open: Callable[[], None] = lambda: None,
    ):
        if failures < 1 or cooldown_s <= 0:
            raise ValueError(
                f"breaker for {name}: failures must be >= 1 and cooldown_s > 0 "
                f"(got failures={failures}, cooldown_s={cooldown_s})"
            )
        self.failures, self.cooldown_s, self.name = failures, cooldown_s, name
        self.clock, self.on_half_open = clock, on_half_open
        self.state = BreakerState.CLOSED
        self.in_a_row = 0
        self.opened_at = 0.0
        self.probing = False

    def check(self) -> None:
        """Return if a call may go out now; else raise BreakerOpen saying until when."""
        if self.state == BreakerState.OPEN:
            left = self.opened_at + self.cooldown_s - self.clock()
            if left > 0:
                raise BreakerOpen(
                    f"circuit breaker for {self.name} is open after {self.in_a_row} failed "
                    f"calls in a row; next probe in {left:.1f}s"
                )
            self.state = BreakerState.HALF_OPEN
        if self.state == BreakerState.HALF_OPEN:
            if self.probing:
                raise BreakerOpen(
                    f"circuit breaker for {self.name} is half-open: a probe call is "
                    f"in flight, others fail fast until it succeeds"
                )
            self.probing = True
            self.on_half_open()

    def record(self, ok: bool) -> None:
        """The outcome of a call that `check` let through."""
        self.probing = False
        if ok:
            self.state, self.in_a_row = BreakerState.CLOSED, 0
            return
        self.in_a_row += 1
        if self.state == BreakerState.HALF_OPEN or self.in_a_row >= self.failures:
            self.state, self.opened_at = BreakerState.OPEN, self.clock()
