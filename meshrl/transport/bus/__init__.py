"""meshrl.transport.bus: NATS JetStream for every service (work queues, run-state KV, weights store).

Modules: server (EmbeddedNats), cluster (NatsCluster: N clustered local nodes), subjects
(names), client (Bus), worker (consumer loop), pull (learner fetch), kv (RunState), objects
(WeightsStore), codec (packed arrays).

The names below load on first use (PEP 562): importing a pure-Python submodule such as
`subjects` (names and permissions), `credentials`, `tls`, `errors` or `server` does not import nats
(and aiohttp), so the CLI can import them at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

_EXPORTS = {
    "Bus": "client",
    "Delivery": "context",
    "WorkContext": "context",
    "BusError": "errors",
    "BusUnavailable": "errors",
    "ObjectIntegrityError": "errors",
    "ObjectMissing": "errors",
    "PublishFailed": "errors",
    "StaleRevision": "errors",
    "NatsCluster": "cluster",
    "EmbeddedNats": "server",
}
__all__ = list(_EXPORTS)

if TYPE_CHECKING:
    from meshrl.transport.bus.client import Bus
    from meshrl.transport.bus.cluster import NatsCluster
    from meshrl.transport.bus.context import Delivery, WorkContext
    from meshrl.transport.bus.errors import (
        BusError,
        BusUnavailable,
        ObjectIntegrityError,
        ObjectMissing,
        PublishFailed,
        StaleRevision,
    )
    from meshrl.transport.bus.server import EmbeddedNats


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
