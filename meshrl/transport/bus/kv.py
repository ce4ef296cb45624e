"""Run state in a JetStream KV bucket: get / put / compare-and-set / watch.

Values are bytes on the wire; `encode` turns a protobuf message into its serialization,
bytes stay bytes, anything else becomes JSON. `Entry.json()` / `Entry.proto(cls)` decode.

    rev = (await state.get("weights_version")).revision
    await state.cas("weights_version", notice, rev)   # StaleRevision if someone won first
    async for entry in state.watch("weights_notice"): ...   # current value, then newer ones

get / put / cas / delete / keys ride out transient failures (a server restart, a cluster
electing a new leader for the bucket) for up to ELECTION_PATIENCE_S. A cas retried after a
lost reply may find its own write and raise StaleRevision: re-read, as after any lost race.
"""

import json
from dataclasses import dataclass
from typing import AsyncIterator

import nats.errors
import nats.js.errors
from google.protobuf.message import Message
from nats.js.kv import KeyValue

from meshrl.transport.bus.errors import StaleRevision
from meshrl.transport.bus.retry import election_patience, retry_transient

WATCH_RECHECK_S = 5.0


def encode(value) -> bytes:
    if isinstance(value, Message):
        return value.SerializeToString()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return json.dumps(value, sort_keys=True).encode()


@dataclass(frozen=True)
class Entry:
    key: str
    value: bytes
    revision: int

    def json(self):
        return json.loads(self.value)

    def proto(self, cls: type[Message]) -> Message:
        msg = cls()
        msg.ParseFromString(self.value)
        return msg


async def _next_hint(sub, timeout: float) -> None:
    try:
        await sub.next_msg(timeout=timeout)
    except nats.errors.TimeoutError:
        pass


async def _patiently(kv: KeyValue, call):
    return await retry_transient(call, patience_s=election_patience(kv._js._nc))


class RunState:
    """A KV bucket (created by Bus.ensure_streams)."""

    def __init__(self, kv: KeyValue):
        self._kv = kv

    @classmethod
    def for_bucket(cls, js, bucket: str) -> "RunState":
        """Bind without a server round trip (js.key_value() would look the stream up)."""
        return cls(KeyValue(name=bucket, stream=f"KV_{bucket}", pre=f"$KV.{bucket}.", js=js, direct=False))

    async def get(self, key: str) -> Entry | None:
        """The current entry, or None if the key was never set or was deleted."""
        try:
            e = await _patiently(self._kv, lambda: self._kv.get(key))
        except (nats.js.errors.KeyNotFoundError, nats.js.errors.KeyDeletedError):
            return None
        return Entry(key, e.value or b"", e.revision)

    async def put(self, key: str, value) -> int:
        """Unconditional write; returns the new revision."""
        return await _patiently(self._kv, lambda: self._kv.put(key, encode(value)))

    async def cas(self, key: str, value, revision: int) -> int:
        """Write only if the key's revision is still `revision` (0: only if absent)."""
        try:
            if revision == 0:
                return await _patiently(self._kv, lambda: self._kv.create(key, encode(value)))
            return await _patiently(self._kv, lambda: self._kv.update(key, encode(value), last=revision))
        except nats.js.errors.KeyWrongLastSequenceError as err:
            raise StaleRevision(
                f"key {key!r} changed since revision {revision}: re-read it with get() and retry ({err.description})"
            ) from err

    async def delete(self, key: str) -> None:
        await _patiently(self._kv, lambda: self._kv.delete(key))

    async def entries(self, prefix: str) -> list[Entry]:
        """Every live entry whose key starts with `prefix.`, sorted by key.

        No consumer (a service's NATS user may not create one: subjects.py, so `keys()` is
        the learner's and admin's): message gets with `next_by_subj`, one per stored key under
        the prefix (the bucket keeps one revision per key); a key whose last message is a
        delete or purge marker is gone."""
        js, stream, pre = self._kv._js, self._kv._stream, self._kv._pre
        latest: dict[str, object] = {}
        seq = 1
        while True:
            try:
                msg = await _patiently(
                    self._kv, lambda s=seq: js.get_msg(stream, seq=s, subject=f"{pre}{prefix}.>", next=True)
                )
            except nats.js.errors.NotFoundError:
                break
            latest[msg.subject[len(pre) :]] = msg
            seq = msg.seq + 1
        return [
            Entry(key, m.data or b"", m.seq)
            for key, m in sorted(latest.items())
            if (m.headers or {}).get("KV-Operation") not in ("DEL", "PURGE")
        ]

    async def keys(self) -> list[str]:
        """Every live (not deleted) key of the bucket; [] when there is none."""
        try:
            return await _patiently(self._kv, self._kv.keys)
        except nats.js.errors.NoKeysError:
            return []

    async def watch(self, key: str, *, recheck_s: float = WATCH_RECHECK_S) -> AsyncIterator[Entry]:
        """Yield the current value (if any) first, then each newer one; deletes are skipped.

        No consumer (a service's NATS user may not create one: subjects.py): it subscribes
        to the key's subject and re-reads the key when a put arrives, and every `recheck_s`
        anyway (a put made while the connection was down reaches no subscriber). What it
        yields is the stored entry: a message on the subject is only a hint. A burst of
        puts may yield only the newest."""
        nc = self._kv._js._nc
        sub = await nc.subscribe(f"{self._kv._pre}{key}")
        await nc.flush()  # registered before the first read: no put falls between the two
        last = 0
        try:
            while True:
                entry = await self.get(key)
                if entry is not None and entry.revision > last:
                    last = entry.revision
                    yield entry
                await _next_hint(sub, recheck_s)
        finally:
            await sub.unsubscribe()
