"""Which NATS account each bus user lives in, and what crosses from the run's account to the others.

    account_of("learner")    # "RUN": JetStream, the streams, the KV (learner and admin)
    account_of("rollout")    # "KIND_ROLLOUT": its own account, no JetStream of its own
    crossing("rollout", perms)   # what it imports from RUN: a service per subject it publishes,
                                 # a stream per subject it subscribes to (not its inbox)

Why accounts and not permissions alone: nats-server checks a client's publish permissions on
the subject it publishes to, never on the reply subject it names, and the server itself
answers (a JetStream API reply, a publish's ack, the next message of a durable) on that reply
subject. In one account, a service could thus have its answer land on `ready`,
`weights.loaded` or any run-KV key, where the stream or the learner takes it. Across accounts,
a request goes to the run's account through a service import, and its answer comes back to
the reply subject in the requester's own account: the run's subjects there are only what that
account imports, so the answer reaches no stream and no learner. A service kind publishes and
subscribes to exactly the subjects its permissions allow (subjects.py); each of those is an
import, so what it may do is unchanged.

The learner and admin share the run's account: they own JetStream (they create the streams and
consumers; the learner writes the whole KV) and are trusted with what they could write anyway.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshrl.transport.bus.subjects import CONSUMER_CREATORS, Permissions, inbox_prefix

RUN_ACCOUNT = "RUN"


def account_of(user: str) -> str:
    """The run's account for the JetStream owners, one account per service kind otherwise."""
    return RUN_ACCOUNT if user in CONSUMER_CREATORS else f"KIND_{user.upper()}"


@dataclass(frozen=True)
class Crossing:
    """What one service kind's account imports from the run's account."""

    services: tuple[str, ...]  # requests and publishes, answered or stored in the run's account
    streams: tuple[str, ...]  # messages of the run's account it listens to (KV hints, advisories)


def crossing(user: str, perms: Permissions) -> Crossing:
    """Every subject `user` may publish, as a service; every one it may subscribe to but its own
    inbox (answers come back there by the import's reply mapping), as a stream."""
    inbox = inbox_prefix(user)
    return Crossing(perms.publish, tuple(s for s in perms.subscribe if s.split(".")[0] != inbox))
