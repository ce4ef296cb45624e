"""Run-state KV and the weights object store on a real nats-server; connect failures."""

import asyncio
import base64
import hashlib
import json
import os
import time

import pytest
from nats.js import api
from nats.js.kv import MSG_ROLLUP_SUBJECT

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import Bus, BusUnavailable, ObjectIntegrityError, ObjectMissing, StaleRevision
from meshrl.transport.bus import subjects as names
from tests.fixtures.ports import refused_port

pytestmark = pytest.mark.timeout(60)


async def test_kv_put_get_and_cas_rejects_stale_revision(bus):
    assert await bus.state.get("weights_version") is None
    r1 = await bus.state.cas("weights_version", {"version": 1}, 0)  # create
    with pytest.raises(StaleRevision, match="changed since revision 0"):
        await bus.state.cas("weights_version", {"version": 99}, 0)
    r2 = await bus.state.cas("weights_version", {"version": 2}, r1)
    with pytest.raises(StaleRevision, match=f"changed since revision {r1}"):
        await bus.state.cas("weights_version", {"version": 3}, r1)  # lost the race
    entry = await bus.state.get("weights_version")
    assert (entry.json(), entry.revision) == ({"version": 2}, r2)


async def test_kv_protobuf_values_and_watch_yields_current_then_updates(bus):
    await bus.state.put("weights_notice", common_pb2.WeightsNotice(version=1, transport="objectstore"))
    watch = bus.state.watch("weights_notice")
    first = await asyncio.wait_for(watch.__anext__(), 5)
    assert first.proto(common_pb2.WeightsNotice).version == 1
    await bus.state.put("weights_notice", common_pb2.WeightsNotice(version=2))
    second = await asyncio.wait_for(watch.__anext__(), 5)
    assert second.proto(common_pb2.WeightsNotice).version == 2
    assert second.revision > first.revision
    await watch.aclose()


def write_random(path, size: int) -> str:
    data = os.urandom(size)
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest()


async def test_object_store_round_trips_20mb_file(bus, tmp_path):
    size = 20 * 1024 * 1024 + 12345  # not a multiple of the 1 MiB chunk
    sha = write_random(tmp_path / "w.safetensors", size)
    info = await bus.weights.put_file("w1", tmp_path / "w.safetensors")
    assert (info.size, info.chunks) == (size, 21)
    out = await bus.weights.get_file("w1", tmp_path / "back.safetensors")
    assert hashlib.sha256(out.read_bytes()).hexdigest() == sha
    assert not (tmp_path / "back.safetensors.partial").exists()
    # fetch_verified hands back the checksum it verified, so the caller need not re-hash
    assert await bus.weights.fetch_verified("w1", tmp_path / "again") == sha
    stock = await (await bus.js.object_store(names.object_bucket(bus.run_id))).get("w1")
    assert hashlib.sha256(stock.data).hexdigest() == sha  # the stock client reads our layout


async def test_object_store_detects_corruption(bus, tmp_path):
    write_random(tmp_path / "w", 3 * 1024 * 1024)
    info = await bus.weights.put_file("w1", tmp_path / "w")
    meta_subject = f"$O.{info.bucket}.M.{base64.urlsafe_b64encode(b'w1').decode()}"

    async def rewrite_info(**changes):
        body = {**info.as_dict(), **changes}
        await bus.js.publish(meta_subject, json.dumps(body).encode(), headers={api.Header.ROLLUP: MSG_ROLLUP_SUBJECT})

    await rewrite_info(digest="SHA-256=" + base64.urlsafe_b64encode(b"\0" * 32).decode())
    with pytest.raises(ObjectIntegrityError, match="sha256 .* does not match"):
        await bus.weights.get_file("w1", tmp_path / "out")
    assert not (tmp_path / "out").exists()  # never renamed into place
    await rewrite_info(size=info.size + 1)
    with pytest.raises(ObjectIntegrityError, match=f"read {info.size} bytes, its info says {info.size + 1}"):
        await bus.weights.get_bytes("w1")


async def test_object_store_replace_delete_and_keep_last_k(bus, tmp_path):
    for v in range(1, 5):
        (tmp_path / "w").write_bytes(bytes([v]) * 1000)
        await bus.weights.put_file(names.weights_object_name(v), tmp_path / "w")
    assert await bus.weights.prune(keep=2) == [names.weights_object_name(1), names.weights_object_name(2)]
    assert [i.name for i in await bus.weights.list_objects()] == [
        names.weights_object_name(3),
        names.weights_object_name(4),
    ]
    assert await bus.weights.get_bytes(names.weights_object_name(4)) == bytes([4]) * 1000
    with pytest.raises(ObjectMissing, match="not in bucket"):
        await bus.weights.get_bytes(names.weights_object_name(1))
    (tmp_path / "w").write_bytes(b"new")
    await bus.weights.put_file(names.weights_object_name(4), tmp_path / "w")  # same name: replaced
    assert await bus.weights.get_bytes(names.weights_object_name(4)) == b"new"
    await bus.weights.delete(names.weights_object_name(3))
    assert [i.name for i in await bus.weights.list_objects()] == [names.weights_object_name(4)]


async def test_a_failed_file_put_raises_its_own_error_not_a_buffer_error(bus, tmp_path, monkeypatch):
    from meshrl.transport.bus.errors import PublishFailed

    async def refused(name, view, chunk_size):
        raise PublishFailed("no PubAck (a stand-in for a server that stopped answering)")

    monkeypatch.setattr(bus.weights, "_put_once", refused)
    (tmp_path / "w").write_bytes(os.urandom(1000))
    with pytest.raises(PublishFailed, match="failed 3 times"):  # put_file mmaps the file; the view outlives it
        await bus.weights.put_file("w", tmp_path / "w")


async def test_empty_object_round_trips(bus, tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    await bus.weights.put_file("e", tmp_path / "empty")
    assert await bus.weights.get_bytes("e") == b""


async def test_connect_to_a_dead_port_fails_fast_with_a_clear_message(run_id):
    with refused_port() as port:
        url = f"nats://127.0.0.1:{port}"
        start = time.monotonic()
        with pytest.raises(BusUnavailable, match=f"cannot reach NATS at {url} within 5 s: is nats-server running"):
            await Bus.connect(url, run_id, name="t", timeout=5)
    assert time.monotonic() - start < 6


async def test_ensure_streams_is_idempotent_and_safe_concurrently(nats_url, run_id):
    buses = [await Bus.connect(nats_url, run_id, name=f"s{i}") for i in range(3)]
    await asyncio.gather(*(b.ensure_streams() for b in buses))
    await buses[0].ensure_streams()
    # each stream by name: a listing is one page (256 streams), and this server is shared by the session's tests
    want = {names.stage_stream(run_id, s) for s in names.STAGES} | {
        names.dead_stream(run_id),
        names.events_stream(run_id),
    }
    found = {(await buses[0].js.stream_info(name)).config.name for name in want}
    assert found == want
    for b in buses:
        await b.close()


async def test_weights_loaded_events_are_heard_live_and_kept_in_the_events_stream(bus):
    acks = await bus.listen(names.weights_loaded_subject(bus.run_id), common_pb2.WeightsLoaded)
    loaded = common_pb2.WeightsLoaded(replica_id="rollout-0", version=3, ok=True, load_s=0.8)
    await bus.publish_event(names.weights_loaded_subject(bus.run_id), loaded, msg_id="rollout-0.v3")
    assert await acks.next(timeout=5) == loaded
    with pytest.raises(asyncio.TimeoutError, match="no message on meshrl.*weights.loaded within 0.1 s"):
        await acks.next(timeout=0.1)
    await acks.close()
    info = await bus.js.stream_info(names.events_stream(bus.run_id))
    assert info.state.messages == 1
