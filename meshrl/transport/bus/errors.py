"""Errors raised by meshrl.transport.bus. Each message says what is wrong and how to fix it."""


class BusError(Exception):
    """Base class for every meshrl.transport.bus error."""


class BusUnavailable(BusError):
    """NATS cannot be reached, or it runs without JetStream."""


class PublishFailed(BusError):
    """A JetStream publish was not acknowledged after every retry."""


class StaleRevision(BusError):
    """A KV compare-and-set lost: the key changed since the revision the caller read."""


class ObjectIntegrityError(BusError):
    """An object read from the store does not match the size or sha256 in its info."""


class ObjectMissing(BusError):
    """The named object is not in the store (never put, deleted, or pruned)."""


class PermissionDenied(BusError):
    """The server refused a publish or subscribe: this NATS user may not use that subject."""
