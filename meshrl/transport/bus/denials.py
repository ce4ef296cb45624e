"""Permission violations as errors at the call that caused them, not 30 s of timeouts.

A publish the server refuses is dropped with a `-ERR 'Permissions Violation for Publish to
"SUBJECT"'` on the connection; nats-py hands that to the error callback only, so the
JetStream publish (a request) would wait for a PubAck that never comes and the bus would
retry it as a transient timeout. `GuardedNATS.request` races each request against a
violation for its subject and raises PermissionDenied at once. Violations of subscribe
permissions (nothing waits on those) are logged as errors.

Simplifies: a violation is matched to requests by subject only, so two concurrent requests
on one denied subject both fail, which is what they would do anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re

from nats.aio.client import Client as NATS

from meshrl.transport.bus.errors import PermissionDenied

log = logging.getLogger(__name__)
_PUBLISH = re.compile(r'permissions violation for publish to "([^"]+)"', re.IGNORECASE)


class DenialWatch:
    """Futures waiting for a publish violation on a subject; fed by the error callback."""

    def __init__(self):
        self._waiting: dict[str, set[asyncio.Future]] = {}
        self.auth_refused = False  # the server said "Authorization Violation" (bad or no credentials)

    async def on_error(self, err: Exception) -> None:
        text = str(err)
        # nats-py retries a refused connect until the caller's timeout: remember why it failed.
        self.auth_refused |= "authorization violation" in text.lower()
        if "permissions violation" not in text.lower():
            log.debug("nats: %r", err)
            return
        log.error("NATS refused this client: %s", text)
        match = _PUBLISH.search(text)
        for fut in self._waiting.get(match.group(1).lower(), ()) if match else ():
            if not fut.done():
                fut.set_result(text)

    @contextlib.contextmanager
    def watching(self, subject: str):
        fut = asyncio.get_running_loop().create_future()
        waiting = self._waiting.setdefault(subject.lower(), set())
        waiting.add(fut)
        try:
            yield fut
        finally:
            waiting.discard(fut)
            if not waiting:
                self._waiting.pop(subject.lower(), None)


class GuardedNATS(NATS):
    """A nats-py client whose requests fail fast with PermissionDenied when refused."""

    def __init__(self):
        super().__init__()
        self.denials = DenialWatch()

    async def request(
        self, subject: str, payload: bytes = b"", timeout: float = 0.5, old_style: bool = False, headers=None
    ):
        with self.denials.watching(subject) as denied:
            call = asyncio.ensure_future(
                super().request(subject, payload, timeout=timeout, old_style=old_style, headers=headers)
            )
            try:
                await asyncio.wait({call, denied}, return_when=asyncio.FIRST_COMPLETED)
            except asyncio.CancelledError:
                call.cancel()
                raise
            if call.done():
                return call.result()
            call.cancel()
            raise PermissionDenied(
                f"NATS refused a publish to {subject!r}: this client's user "
                f"({self.options.get('user') or 'anonymous'}) may not publish there "
                f"(server said: {denied.result()})"
            )
