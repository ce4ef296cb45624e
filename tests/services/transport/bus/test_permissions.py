"""Least privilege on a real nats-server started with the generated authorization config.

Each service kind's user can do its job (consume its queue, publish its output, the learner
the weights notice and the weights, rollout read them) and nothing the forged-notice
incident needed: no anonymous client, no rollout write to `ready`, the weights notice or
another key of the run KV, no listing of streams.

Run: .venv/bin/python -m pytest tests/services/transport/bus/test_permissions.py -q
"""

import asyncio

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import Bus, BusUnavailable
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.credentials import ENV_VAR, Credentials
from meshrl.transport.bus.errors import PermissionDenied
from meshrl.transport.bus.registry import announce_service
from tests.fixtures.nats import connect_as

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_ambient_credentials")]


async def connect(secured, user: str) -> Bus:
    return await connect_as(secured, user)


@pytest.fixture(scope="module")
async def admin(secured):
    bus = await connect(secured, "admin")
    await bus.ensure_streams()
    yield bus
    await bus.close()


def group(gid: str) -> common_pb2.Group:
    return common_pb2.Group(group_id=gid)


def notice(version: int) -> common_pb2.WeightsNotice:
    return common_pb2.WeightsNotice(version=version)


async def test_anonymous_and_wrong_password_are_refused(secured, admin):
    url, run_id, _ = secured
    with pytest.raises(BusUnavailable, match="refused a client without credentials"):
        await Bus.connect(url, run_id, name="anon", timeout=2)
    with pytest.raises(BusUnavailable, match="refused user 'rollout'"):
        await Bus.connect(url, run_id, name="forger", timeout=2, credentials=Credentials("rollout", "guess"))


async def test_credentials_file_from_the_environment(secured, admin, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(secured[2]["reward"]))
    async with await Bus.connect(secured[0], secured[1], name="from-env") as bus:
        assert bus.nc.options["user"] == "reward"


async def test_rollout_cannot_publish_to_ready(secured, admin):
    async with await connect(secured, "rollout") as rollout:
        with pytest.raises(PermissionDenied, match=r"meshrl\..*\.ready"):
            await rollout.publish("ready", group("forged"), msg_id="forged")
    assert await admin.pending("ready") == 0  # nothing stored


@pytest.mark.parametrize(
    "key", [names.WEIGHTS_NOTICE_KEY, names.RUN_VERSION_KEY, "services.learner.learner-0", "metrics.reward.reward-0"]
)
async def test_rollout_cannot_write_the_notice_or_run_state(secured, admin, key):
    async with await connect(secured, "rollout") as rollout:
        with pytest.raises(PermissionDenied, match="rollout"):
            await rollout.state.put(key, notice(99))
        with pytest.raises(PermissionDenied):
            await rollout.state.delete(key)
    assert await admin.state.get(key) is None


async def test_rollout_cannot_list_streams_or_write_weights(secured, admin):
    async with await connect(secured, "rollout") as rollout:
        with pytest.raises(PermissionDenied, match="STREAM.LIST"):
            await rollout.js.streams_info()
        bucket = names.object_bucket(secured[1])
        for subject in (f"$O.{bucket}.C.forged", f"$O.{bucket}.M.d2VpZ2h0cw=="):  # a chunk, an object's info
            with pytest.raises(PermissionDenied, match=r"\$O\."):
                await rollout.js.publish(subject, b"forged")
    assert [o.name for o in await admin.weights.list_objects()] == []


async def test_learner_writes_weights_and_rollout_reads_them(secured, admin):
    async with await connect(secured, "learner") as learner, await connect(secured, "rollout") as rollout:
        await learner.ensure_streams()  # the learner does this at start (idempotent)
        await learner.weights.put_bytes(names.weights_object_name(1), b"weights v1")
        await learner.state.put(names.WEIGHTS_NOTICE_KEY, notice(1))
        seen = await rollout.state.get(names.WEIGHTS_NOTICE_KEY)
        assert seen.proto(common_pb2.WeightsNotice).version == 1
        watch = rollout.state.watch(names.WEIGHTS_NOTICE_KEY)
        watched = await watch.__anext__()
        await watch.aclose()
        assert watched.proto(common_pb2.WeightsNotice).version == 1
        assert await rollout.weights.get_bytes(names.weights_object_name(1)) == b"weights v1"
        await announce_service(rollout.state, "rollout", "rollout-0", "127.0.0.1:1")
        assert (await admin.state.get("services.rollout.rollout-0")).json()["grpc"] == "127.0.0.1:1"


async def test_rollout_weights_loaded_ack_reaches_the_learner(secured, admin):
    subject = names.weights_loaded_subject(secured[1])
    async with await connect(secured, "learner") as learner, await connect(secured, "rollout") as rollout:
        acks = await learner.listen(subject, common_pb2.WeightsLoaded)
        await rollout.publish_event(subject, common_pb2.WeightsLoaded(version=1, replica_id="rollout-0", ok=True))
        assert (await acks.next(timeout=5)).replica_id == "rollout-0"
        await acks.close()


async def run_worker_once(bus: Bus, stage: str, durable: str, out: str | None) -> list[str]:
    """Consume one message of `stage` as `durable`, publishing it on to `out`."""
    seen = []

    async def handle(msg, ctx):
        seen.append(msg.group_id)
        if out:
            await bus.publish(out, group(msg.group_id), msg_id=msg.group_id)

    worker = bus.make_worker(stage, durable, handle, ack_wait=5)
    task = asyncio.create_task(worker.run())
    try:
        for _ in range(250):
            if worker.counts["acked"]:
                break
            await asyncio.sleep(0.02)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    return seen


async def test_each_kind_does_its_stage_of_the_pipeline(secured, admin):
    """prompts →rollout→ generated →reward→ scored →reference→ ready →learner, each with its own user."""
    async with await connect(secured, "learner") as learner:
        await learner.publish("prompts", common_pb2.PromptTask(group_id="g1"), msg_id="g1")
        for user, stage, out in [
            ("rollout", "prompts", "generated"),
            ("reward", "generated", "scored"),
            ("reference", "scored", "ready"),
        ]:
            async with await connect(secured, user) as bus:
                assert await run_worker_once(bus, stage, user, out) == ["g1"], user
        batch = await learner.pull("ready", "learner", max_msgs=1, timeout=5)
        assert [d.message.group_id for d in batch] == ["g1"]
        await batch[0].ack()


async def test_reward_cannot_consume_prompts(secured, admin):
    async with await connect(secured, "reward") as reward:
        with pytest.raises(PermissionDenied, match="PROMPTS"):
            await reward.pull("prompts", "rollout", max_msgs=1, timeout=1)
