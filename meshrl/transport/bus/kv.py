"""Run state in a JetStream KV bucket: get / put / compare-and-set / watch.

Values are bytes on the wire; `encode` turns a protobuf message into its serialization,
bytes stay bytes, anything else becomes JSON. `Entry.json()` / `Entry.proto(cls)` decode.

    rev = (await state.get("weights_version")).revision
    await state.cas("weights_version", notice, rev)   # StaleRevision if someone won first
    async for entry in state.watch("weights_notice"): ...   # current value, then updates

get / put / cas / delete / keys ride out transient failures (a server restart, a cluster
electing a new leader for the bucket) for up to ELECTION_PATIENCE_S. A cas retried after a
lost reply may find its own write and raise StaleRevision: re-read, as after any lost race.
"""
import json
from dataclasses import dataclass
from typing import AsyncIterator

import nats.js.errors
from google.protobuf.message import Message
from nats.js.kv import KeyValue

from meshrl.transport.bus.errors import StaleRevision
from meshrl.transport.bus.retry import election_patience, retry_transient

DELETE_OPS = ("DEL", "PURGE")


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
                f"key {key!r} changed since revision {revision}: re-read it with get() and retry "
                f"({err.description})") from err

    async def delete(self, key: str) -> None:
        await _patiently(self._kv, lambda: self._kv.delete(key))

    async def keys(self) -> list[str]:
        """Every live (not deleted) key of the bucket; [] when there is none."""
        try:
            return await _patiently(self._kv, self._kv.keys)
        except nats.js.errors.NoKeysError:
            return []

    async def watch(self, key: str) -> AsyncIterator[Entry]:
        """Yield the current value (if any) first, then every later put; deletes are skipped."""
        watcher = await self._kv.watch(key)
        try:
            async for e in watcher:
                if e is None or e.operation in DELETE_OPS:
                    continue  # None marks "initial values delivered"
                yield Entry(e.key, e.value or b"", e.revision)
        finally:
            await watcher.stop()
