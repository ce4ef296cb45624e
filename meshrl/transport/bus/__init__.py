"""meshrl.transport.bus: NATS JetStream for every service (work queues, run-state KV, weights store).

Modules: server (EmbeddedNats), cluster (NatsCluster: N clustered local nodes), subjects
(names), client (Bus), worker (consumer loop), pull (learner fetch), kv (RunState), objects
(WeightsStore), codec (packed arrays).
"""
from meshrl.transport.bus.client import Bus
from meshrl.transport.bus.context import Delivery, WorkContext
from meshrl.transport.bus.errors import (BusError, BusUnavailable, ObjectIntegrityError, ObjectMissing, PublishFailed,
                               StaleRevision)
from meshrl.transport.bus.cluster import NatsCluster
from meshrl.transport.bus.server import EmbeddedNats

__all__ = ["Bus", "Delivery", "WorkContext", "BusError", "BusUnavailable", "ObjectIntegrityError",
           "ObjectMissing", "PublishFailed", "StaleRevision", "EmbeddedNats", "NatsCluster"]
