"""The learner's pull rides out a stream between leaders and still raises real errors.

A NATS cluster that loses a stream's leader answers the learner's fetch with a 503 status
(ServiceUnavailableError, no API code) for the seconds of the election; CI once saw that
kill the learner. The fake subscription below stands in for nats-py's pull subscription.

Run: .venv/bin/python -m pytest tests/unit/transport/bus/test_pull.py
"""

import nats.errors
import nats.js.errors
import pytest

from meshrl.transport.bus import pull as pull_module
from meshrl.transport.bus.consumer import ConsumerSpec
from meshrl.transport.bus.pull import Puller
from meshrl.transport.bus.retry import is_transient


class FakeSubscription:
    """Raises each queued error in turn on fetch, then returns no messages."""

    def __init__(self, errors):
        self.errors, self.fetches = list(errors), 0

    async def fetch(self, max_msgs, timeout):
        self.fetches += 1
        if self.errors:
            raise self.errors.pop(0)
        return []


def puller_with(sub) -> Puller:
    puller = Puller(js=None, run_id="r")
    puller._subs[("ready", "learner")] = sub
    return puller


@pytest.fixture(autouse=True)
def no_wait(monkeypatch):
    monkeypatch.setattr(pull_module, "ELECTION_RETRY_S", 0.0)


def test_a_503_without_an_api_code_is_transient():
    assert is_transient(nats.js.errors.ServiceUnavailableError())
    assert not is_transient(nats.js.errors.NotFoundError())


async def test_a_fetch_during_an_election_returns_nothing_and_the_next_one_works():
    sub = FakeSubscription([nats.js.errors.ServiceUnavailableError()])
    puller = puller_with(sub)
    spec = ConsumerSpec(durable="learner")
    assert await puller.pull("ready", spec, max_msgs=4, timeout=0.1) == []
    assert await puller.pull("ready", spec, max_msgs=4, timeout=0.1) == []
    assert sub.fetches == 2


async def test_a_real_error_is_raised():
    sub = FakeSubscription([nats.js.errors.NotFoundError()])
    with pytest.raises(nats.js.errors.NotFoundError):
        await puller_with(sub).pull("ready", ConsumerSpec(durable="learner"), max_msgs=4, timeout=0.1)


async def test_a_closed_connection_is_raised():
    sub = FakeSubscription([nats.errors.ConnectionClosedError()])
    with pytest.raises(nats.errors.ConnectionClosedError):
        await puller_with(sub).pull("ready", ConsumerSpec(durable="learner"), max_msgs=4, timeout=0.1)
