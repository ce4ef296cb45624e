"""Weights in the JetStream object store, with fast put/get paths.

Objects are stored in the standard layout (chunks on `$O.<bucket>.C.<nuid>`, a rolled-up
JSON info on `$O.<bucket>.M.<name>`, digest `SHA-256=<urlsafe b64>`), so stock clients and
the `nats` CLI can read them. The stock nats-py paths are too slow for weights (`get()`
grows quadratically with the size; docs/benchmarks.md, "Weights push"), so:

- put: 1 MiB chunks published in order from one coroutine, at most PUT_WINDOW un-acked
  (each ack awaited with a timeout; never `publish_async_completed()`, which hangs on a
  429). The sha256 runs in a thread at the same time. Any failure purges the partial chunks
  and the whole put is retried, so chunk order is never broken by a partial retry.
- get: batched direct gets of the object's chunk subject (no consumer: a rollout's NATS
  user may not create one, since a consumer's creator chooses where the server delivers,
  subjects.py), GET_BATCH chunks per request (16 MiB, well under the server's 64 MB
  per-client max_pending) straight into a preallocated buffer or an mmap of the
  destination file; size and sha256 are checked against the object's info before the file
  is renamed into place.
"""

import asyncio
import base64
import hashlib
import json
import mmap
import os
from collections import deque
from datetime import datetime, timezone
from pathlib import Path

import nats.errors
import nats.js.errors
from nats.js import api
from nats.js.errors import NotFoundError, ObjectNotFoundError
from nats.js.kv import MSG_ROLLUP_SUBJECT
from nats.js.object_store import OBJ_CHUNKS_PRE_TEMPLATE, OBJ_DIGEST_TYPE, OBJ_META_PRE_TEMPLATE, OBJ_STREAM_TEMPLATE

from meshrl.transport.bus.errors import ObjectIntegrityError, ObjectMissing, PublishFailed
from meshrl.transport.bus.publish import publish_with_retry

CHUNK_SIZE = 1 << 20
PUT_WINDOW = 16
GET_BATCH = 16
ACK_TIMEOUT_S = 10.0
PUT_ATTEMPTS = 3


def _sha256(view) -> bytes:
    return hashlib.sha256(view).digest()


class _ThreadedSha256:
    """sha256 fed in order from a worker thread, overlapping the hash with the network."""

    def __init__(self):
        self._h = hashlib.sha256()
        self._busy: asyncio.Future | None = None
        self._piece: memoryview | None = None

    async def feed(self, piece: memoryview) -> None:
        await self.wait()
        self._piece = piece
        self._busy = asyncio.ensure_future(asyncio.to_thread(self._h.update, piece))

    async def wait(self) -> None:
        """Wait for the running update, then release its slice (an mmap cannot close with one alive)."""
        if self._busy is not None:
            try:
                await self._busy
            finally:
                self._busy = None
                self._piece.release()

    async def digest(self) -> bytes:
        await self.wait()
        return self._h.digest()


def _digest_hex(digest: str | None) -> str:
    """`SHA-256=<urlsafe b64>` (the object's info) → hex; "" when there is none."""
    if not digest or "=" not in digest:
        return ""
    return base64.urlsafe_b64decode(digest.split("=", 1)[1]).hex()


def _digest_str(sha: bytes) -> str:
    return OBJ_DIGEST_TYPE + base64.urlsafe_b64encode(sha).decode()


def _meta_subject(bucket: str, name: str) -> str:
    return OBJ_META_PRE_TEMPLATE.format(bucket=bucket, obj=base64.urlsafe_b64encode(name.encode()).decode())


def _close_mapping(mm: mmap.mmap) -> None:
    """Close `mm`, unless a view of it is still referenced: a failed put's traceback holds
    put_bytes' frame and its view. Then the garbage collector closes it, and the put's own
    error (PublishFailed...) reaches the caller instead of a BufferError that would hide it."""
    try:
        mm.close()
    except BufferError:
        pass


class WeightsStore:
    """One run's object store bucket; `keep` (if set) prunes to the newest K after each put."""

    def __init__(self, js, bucket: str, *, keep: int | None = None):
        self._js, self.bucket, self.keep = js, bucket, keep
        self._stream = OBJ_STREAM_TEMPLATE.format(bucket=bucket)
        self._store = None

    async def _obs(self):
        if self._store is None:
            self._store = await self._js.object_store(self.bucket)
        return self._store

    async def info(self, name: str) -> api.ObjectInfo:
        try:
            return await (await self._obs()).get_info(name)
        except ObjectNotFoundError as err:
            raise ObjectMissing(
                f"object {name!r} is not in bucket {self.bucket!r} (never put, deleted or pruned)"
            ) from err

    # ---- put -------------------------------------------------------------------------

    async def put_file(self, name: str, path, *, chunk_size: int = CHUNK_SIZE) -> api.ObjectInfo:
        """Store the file at `path` as `name` (replacing an older object of that name)."""
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                return await self.put_bytes(name, b"", chunk_size=chunk_size)
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                return await self.put_bytes(name, memoryview(mm), chunk_size=chunk_size)
            finally:
                _close_mapping(mm)

    async def put_bytes(self, name: str, data, *, chunk_size: int = CHUNK_SIZE) -> api.ObjectInfo:
        view = memoryview(data).cast("B")
        old = await self._current(name)
        for attempt in range(1, PUT_ATTEMPTS + 1):
            try:
                info = await self._put_once(name, view, chunk_size)
                break
            except (PublishFailed, asyncio.TimeoutError, nats.errors.TimeoutError, nats.js.errors.APIError) as err:
                if attempt == PUT_ATTEMPTS:
                    raise PublishFailed(f"put of {name!r} ({len(view)} bytes) failed {attempt} times: {err!r}") from err
        if old is not None and not old.deleted:
            await self._purge_chunks(old.nuid)
        if self.keep:
            await self.prune(self.keep)
        return info

    async def _current(self, name: str) -> api.ObjectInfo | None:
        try:
            return await self.info(name)
        except ObjectMissing:
            return None

    async def _put_once(self, name: str, view: memoryview, chunk_size: int) -> api.ObjectInfo:
        nuid = self._js._nc._nuid.next().decode()
        digest = asyncio.ensure_future(asyncio.to_thread(_sha256, view))
        try:
            chunks = await self._publish_chunks(
                OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=self.bucket, obj=nuid), view, chunk_size
            )
            info = api.ObjectInfo(
                name=name,
                bucket=self.bucket,
                nuid=nuid,
                size=len(view),
                chunks=chunks,
                mtime=datetime.now(timezone.utc).isoformat(),
                digest=_digest_str(await digest),
                options=api.ObjectMetaOptions(max_chunk_size=chunk_size),
            )
            await publish_with_retry(
                self._js,
                _meta_subject(self.bucket, name),
                json.dumps(info.as_dict()).encode(),
                headers={api.Header.ROLLUP: MSG_ROLLUP_SUBJECT},
            )
            return info
        except BaseException:
            await asyncio.gather(digest, return_exceptions=True)  # the thread still reads `view`
            await self._purge_chunks(nuid)
            raise

    async def _publish_chunks(self, subject: str, view: memoryview, chunk_size: int) -> int:
        """Publish chunks in order with ≤ PUT_WINDOW un-acked; returns the chunk count."""
        window: deque[asyncio.Future] = deque()
        try:
            for offset in range(0, len(view), chunk_size):
                window.append(await self._js.publish_async(subject, view[offset : offset + chunk_size]))
                if len(window) >= PUT_WINDOW:
                    await asyncio.wait_for(window.popleft(), ACK_TIMEOUT_S)
            while window:
                await asyncio.wait_for(window.popleft(), ACK_TIMEOUT_S)
        finally:
            for fut in window:
                fut.cancel()
        return -(-len(view) // chunk_size)

    async def _purge_chunks(self, nuid: str) -> None:
        subject = OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=self.bucket, obj=nuid)
        try:
            await self._js.purge_stream(self._stream, subject=subject)
        except Exception:  # noqa: BLE001 - best effort; leftover chunks only cost disk
            pass

    # ---- get -------------------------------------------------------------------------

    async def get_bytes(self, name: str) -> bytearray:
        """The object's bytes, checked against its size and sha256."""
        info = await self.info(name)
        buf = bytearray(info.size or 0)
        await self._read_into(info, memoryview(buf))
        return buf

    async def get_file(self, name: str, dest) -> Path:
        """Write the object to `dest` (via `dest.partial`, renamed once verified)."""
        await self.fetch_verified(name, dest)
        return Path(dest)

    async def fetch_verified(self, name: str, dest) -> str:
        """`get_file`, returning the sha256 (hex) the bytes were verified against, so a
        caller holding an expected checksum need not hash the file a second time."""
        info = await self.info(name)
        dest = Path(dest)
        tmp = dest.with_name(dest.name + ".partial")
        try:
            with open(tmp, "w+b") as f:
                f.truncate(info.size or 0)
                if info.size:
                    with mmap.mmap(f.fileno(), info.size) as mm:
                        view = memoryview(mm)
                        try:
                            await self._read_into(info, view)
                        finally:
                            view.release()
            os.replace(tmp, dest)
        finally:
            tmp.unlink(missing_ok=True)
        return _digest_hex(info.digest)

    async def _read_into(self, info: api.ObjectInfo, view: memoryview) -> None:
        hasher = _ThreadedSha256()
        try:
            received = await self._pull_chunks(info, view, hasher) if info.chunks else 0
        finally:
            await asyncio.gather(hasher.wait(), return_exceptions=True)  # no thread may outlive `view`
        if received != info.size:
            raise ObjectIntegrityError(
                f"object {info.name!r}: read {received} bytes, its info says {info.size}: "
                "the object is corrupt or was replaced during the read; put it again"
            )
        sha = await hasher.digest()
        if _digest_str(sha) != (info.digest or "").replace(OBJ_DIGEST_TYPE.upper(), OBJ_DIGEST_TYPE):
            raise ObjectIntegrityError(
                f"object {info.name!r}: sha256 {_digest_str(sha)} does not match its info's {info.digest}: "
                "the stored bytes are corrupt; put the object again"
            )

    async def _pull_chunks(self, info: api.ObjectInfo, view: memoryview, hasher: _ThreadedSha256) -> int:
        """Every chunk, in order, by batched direct gets: no consumer is created (a rollout's
        NATS user may not: subjects.py), GET_BATCH chunks per request."""
        subject = OBJ_CHUNKS_PRE_TEMPLATE.format(bucket=self.bucket, obj=info.nuid)
        nc = self._js._nc
        inbox = await nc.subscribe(nc.new_inbox())
        offset, got, seq = 0, 0, 1
        try:
            while got < info.chunks:
                request = {"seq": seq, "next_by_subj": subject, "batch": min(GET_BATCH, info.chunks - got)}
                await nc.publish(
                    f"$JS.API.DIRECT.GET.{self._stream}", json.dumps(request).encode(), reply=inbox.subject
                )
                start = offset
                async for data, chunk_seq in self._batch(inbox, info, got):
                    end = offset + len(data)
                    if end > len(view):
                        raise ObjectIntegrityError(f"object {info.name!r}: more bytes than its size {info.size}")
                    view[offset:end] = data
                    offset, got, seq = end, got + 1, chunk_seq + 1
                if offset == start:
                    raise ObjectIntegrityError(
                        f"object {info.name!r}: only {got} of {info.chunks} chunks are stored: chunks are missing"
                    )
                await hasher.feed(view[start:offset])
        finally:
            await inbox.unsubscribe()
        return offset

    async def _batch(self, inbox, info: api.ObjectInfo, got: int):
        """(chunk bytes, its stream sequence) of one direct-get batch, until its end-of-batch."""
        while True:
            try:
                msg = await inbox.next_msg(timeout=ACK_TIMEOUT_S)
            except nats.errors.TimeoutError as err:
                raise ObjectIntegrityError(
                    f"object {info.name!r}: no chunk after {got} of {info.chunks} "
                    f"within {ACK_TIMEOUT_S:g} s (server gone, or direct get refused)"
                ) from err
            status = (msg.headers or {}).get("Status")
            if status == "204" or status == "404":  # end of batch / nothing (more) on the subject
                return
            if status:
                raise ObjectIntegrityError(
                    f"object {info.name!r}: direct get answered {status} {(msg.headers or {}).get('Description', '')}"
                )
            yield msg.data, int(msg.headers["Nats-Sequence"])

    # ---- delete / list / prune -------------------------------------------------------

    async def delete(self, name: str) -> None:
        try:
            await (await self._obs()).delete(name)
        except ObjectNotFoundError as err:
            raise ObjectMissing(f"cannot delete {name!r}: not in bucket {self.bucket!r}") from err

    async def list_objects(self) -> list[api.ObjectInfo]:
        """Live objects, oldest first (by put time, then name)."""
        try:
            infos = await (await self._obs()).list(ignore_deletes=True)
        except NotFoundError:
            return []
        return sorted((i for i in infos if not i.deleted), key=lambda i: (i.mtime or "", i.name))

    async def prune(self, keep: int) -> list[str]:
        """Delete all but the newest `keep` objects; returns the deleted names."""
        if keep < 1:
            raise ValueError(f"keep={keep}: must be >= 1 (a replica may be reading the newest)")
        doomed = [i.name for i in (await self.list_objects())[:-keep]]
        for name in doomed:
            await self.delete(name)
        return doomed
