"""CircuitBreaker states, stepped with a hand-driven clock (no sleeping)."""

import pytest

from meshrl.transport.rpc.breaker import BreakerOpen, BreakerState, CircuitBreaker


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_failures_in_a_row_and_fails_fast():
    clock = Clock()
    breaker = CircuitBreaker(3, 5.0, name="judge", clock=clock)
    for _ in range(2):
        breaker.check()
        breaker.record(ok=False)
    breaker.check()
    breaker.record(ok=True)  # a success resets the count
    assert breaker.in_a_row == 0
    for _ in range(3):
        breaker.check()
        breaker.record(ok=False)
    assert breaker.state == BreakerState.OPEN
    clock.now += 4.0
    with pytest.raises(BreakerOpen, match=r"judge is open after 3 failed calls in a row; next probe in 1.0s"):
        breaker.check()


def test_half_open_lets_one_probe_through_and_its_success_closes():
    clock, reopened = Clock(), []
    breaker = CircuitBreaker(1, 5.0, clock=clock, on_half_open=lambda: reopened.append(clock.now))
    breaker.check()
    breaker.record(ok=False)
    clock.now += 5.0
    breaker.check()  # the probe
    assert breaker.state == BreakerState.HALF_OPEN and reopened == [105.0]
    with pytest.raises(BreakerOpen, match="a probe call is in flight"):
        breaker.check()
    breaker.record(ok=True)
    assert breaker.state == BreakerState.CLOSED
    breaker.check()


def test_failed_probe_opens_for_another_cooldown():
    clock = Clock()
    breaker = CircuitBreaker(2, 5.0, clock=clock)
    for _ in range(2):
        breaker.check()
        breaker.record(ok=False)
    clock.now += 6.0
    breaker.check()
    breaker.record(ok=False)
    assert breaker.state == BreakerState.OPEN and breaker.opened_at == 106.0
    with pytest.raises(BreakerOpen):
        breaker.check()


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="failures must be >= 1 and cooldown_s > 0"):
        CircuitBreaker(0, 1.0)
