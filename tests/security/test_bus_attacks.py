"""A compromised service makes the NATS server publish where its own user may not.

On a real nats-server started with the run's generated users and permissions: the server
publishes on a client's behalf to a push consumer's `deliver_subject` and to a request's
reply subject without checking that client's permissions. Each test performs one such
attack with a service kind's own credentials:
- a push consumer (on the run KV, where the reward writes its own keys) delivering a forged
  `WeightsLoaded` to the learner's `weights.loaded`, or anything into `ready`;
- a service's own durable turned into a push consumer;
- every request a kind may make (each JetStream API call, publish and pull it is allowed),
  with its reply subject aimed at `ready`, `weights.loaded`, the weights notice, the run
  version or another kind's KV key: nothing arrives there (each kind has its own NATS
  account, meshrl.transport.bus.accounts); and, behind that, the learner ignores a JetStream
  API answer on `weights.loaded` (origin.py);
- a put to a kind's own KV key with `Nats-Rollup: all` (the server would purge every other
  key of the bucket): the KV's stream refuses rollup headers (streams.refuse_rollups);
- malformed replica entries written with the kinds' own credentials (each may write its own
  `services.<kind>.*` keys): the rollout's environment lookup and the learner's health watch
  and eval lookup skip them instead of raising KeyError.

Run: .venv/bin/python -m pytest tests/security/test_bus_attacks.py -q
"""

from __future__ import annotations

import asyncio
import json

import nats.js.errors
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.services.learner.health_watch import HealthWatch
from meshrl.services.rollout.agent.replicas import KvReplicas
from meshrl.transport.bus import Bus
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.errors import PermissionDenied
from meshrl.transport.bus.registry import service_addresses
from meshrl.transport.bus.subjects import kv_stream
from tests.fixtures.nats import connect_as

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_ambient_credentials")]
QUIET_S = 1.5  # long enough for a delivery on loopback to have arrived


async def connect(secured, user: str) -> Bus:
    return await connect_as(secured, user)


@pytest.fixture(scope="module")
async def learner(secured):
    bus = await connect(secured, "learner")
    await bus.ensure_streams()  # streams, the four durables, the KV: as at a run's start
    yield bus
    await bus.close()


def push_consumer(stream: str, deliver_to: str, **config) -> bytes:
    return json.dumps(
        {
            "stream_name": stream,
            "config": {"deliver_subject": deliver_to, "ack_policy": "none", "deliver_policy": "all", **config},
        }
    ).encode()


async def refused(bus: Bus, subject: str, payload: bytes) -> bool:
    """Send the JetStream API request; True if the server refused it (PermissionDenied)."""
    try:
        await bus.nc.request(subject, payload, timeout=2)
    except PermissionDenied as err:
        return "CONSUMER.CREATE" in str(err).upper()
    return False


async def nothing_arrives(listener) -> bool:
    try:
        await listener.next(timeout=QUIET_S)
    except asyncio.TimeoutError:
        return True
    return False


async def test_reward_cannot_deliver_a_forged_weights_ack_to_the_learner(secured, learner):
    run_id = secured[1]
    acks = await learner.listen(names.weights_loaded_subject(run_id), common_pb2.WeightsLoaded)
    forged = common_pb2.WeightsLoaded(run_id=run_id, replica_id="rollout-0", version=7, ok=True)
    async with await connect(secured, "reward") as reward:
        await reward.state.put("services.reward.forged", forged)  # its own key: allowed
        subject = f"$KV.{names.kv_bucket(run_id)}.services.reward.forged"
        denied = await refused(
            reward,
            f"$JS.API.CONSUMER.CREATE.{kv_stream(run_id)}",
            push_consumer(kv_stream(run_id), names.weights_loaded_subject(run_id), filter_subject=subject),
        )
    assert await nothing_arrives(acks), "the learner received the reward's forged WeightsLoaded"
    assert denied
    await acks.close()


@pytest.mark.parametrize("kind", ["rollout", "reward", "reference", "reward_model", "environment"])
async def test_no_service_can_push_a_stream_into_ready(secured, learner, kind):
    run_id, ready = secured[1], names.stage_subject(secured[1], "ready")
    async with await connect(secured, kind) as bus:
        denied = await refused(
            bus, f"$JS.API.CONSUMER.CREATE.{kv_stream(run_id)}", push_consumer(kv_stream(run_id), ready)
        )
    await asyncio.sleep(QUIET_S)
    assert await learner.pending("ready") == 0 and denied


@pytest.mark.parametrize("kind,stage", [("rollout", "prompts"), ("reward", "generated"), ("reference", "scored")])
async def test_a_service_cannot_turn_its_durable_into_a_push_consumer(secured, learner, kind, stage):
    stream, ready = names.stage_stream(secured[1], stage), names.stage_subject(secured[1], "ready")
    async with await connect(secured, kind) as bus:
        denied = await refused(
            bus,
            f"$JS.API.CONSUMER.CREATE.{stream}.{kind}",
            push_consumer(stream, ready, durable_name=kind, ack_policy="explicit"),
        )
        assert (await bus.js.consumer_info(stream, kind)).config.deliver_subject is None  # still a pull consumer
        assert denied


KV_TARGETS = (names.RUN_VERSION_KEY, names.WEIGHTS_NOTICE_KEY, "services.learner.forged")


def reply_targets(run_id: str, kind: str) -> list[str]:
    """Where an answer to `kind` must never land: the learner's inputs and run-KV keys that
    `kind` may not publish to itself (the reference publishes to `ready`, the rollout to
    `weights.loaded`: there, its own publish would do the same)."""
    kv = f"$KV.{names.kv_bucket(run_id)}"
    targets = [names.stage_subject(run_id, "ready"), names.weights_loaded_subject(run_id)]
    targets += [f"{kv}.{key}" for key in KV_TARGETS]
    return [t for t in targets if t not in names.kind_permissions(run_id, kind).publish]


def requests_of(run_id: str, kind: str) -> list[tuple[str, bytes]]:
    """A request to every subject `kind` may publish to (a wildcard's tail filled in), each
    one the server answers: a JetStream API reply, a publish's ack, a pull's next message."""
    pull = json.dumps({"batch": 1, "no_wait": True}).encode()
    # not its own publishes to ready / weights.loaded: those store what it sends, as they may
    own = {names.stage_subject(run_id, "ready"), names.weights_loaded_subject(run_id)}
    subjects = [s.replace(">", "x") for s in names.kind_permissions(run_id, kind).publish if s not in own]
    return [(s, pull if ".MSG.NEXT." in s else b"{}") for s in subjects]


async def stored(learner: Bus, run_id: str) -> dict[str, int]:
    streams = (names.stage_stream(run_id, "ready"), names.events_stream(run_id))
    return {s: (await learner.js.stream_info(s)).state.messages for s in streams}


@pytest.mark.parametrize("kind", ["rollout", "reward", "reference", "reward_model", "environment"])
async def test_no_server_answer_reaches_a_run_subject_or_kv_key_through_a_reply_subject(secured, learner, kind):
    run_id = secured[1]
    acks = await learner.listen(names.weights_loaded_subject(run_id), common_pb2.WeightsLoaded)
    before = await stored(learner, run_id)
    if kind == "reward":  # a real message in its own queue, for its pull to hand on
        async with await connect(secured, "rollout") as rollout:
            await rollout.publish("generated", common_pb2.Group(group_id="unscored"), msg_id="unscored")
    async with await connect(secured, kind) as bus:
        for subject, payload in requests_of(run_id, kind):
            for target in reply_targets(run_id, kind):
                await bus.nc.publish(subject, payload, reply=target)
        await bus.nc.flush()
    assert await nothing_arrives(acks), f"an answer to the {kind} reached weights.loaded"
    assert await stored(learner, run_id) == before, f"an answer to the {kind} was stored in ready or events"
    for key in KV_TARGETS:
        assert await learner.state.get(key) is None, f"an answer to the {kind} was stored under {key}"
    await acks.close()


async def test_an_api_answer_aimed_at_weights_loaded_is_ignored(secured, learner):
    # The rollout may publish on weights.loaded, so its own account imports it and an answer it
    # aims there does arrive: the learner ignores it (no origin stamp: origin.py).
    run_id = secured[1]
    acks = await learner.listen(names.weights_loaded_subject(run_id), common_pb2.WeightsLoaded)
    async with await connect(secured, "rollout") as rollout:
        await rollout.nc.publish(
            f"$JS.API.STREAM.INFO.{kv_stream(run_id)}", b"", reply=names.weights_loaded_subject(run_id)
        )
        await rollout.nc.flush()
        await asyncio.sleep(0.5)  # the answer first, then the rollout's real ack
        await rollout.publish_event(
            names.weights_loaded_subject(run_id),
            common_pb2.WeightsLoaded(run_id=run_id, replica_id="rollout-0", version=1, ok=True),
        )
    first = await acks.next(timeout=5)
    assert (first.replica_id, first.version, first.ok) == ("rollout-0", 1, True)
    await acks.close()


async def test_malformed_replica_entries_are_skipped_by_their_readers(secured, learner):
    async with await connect(secured, "environment") as env:
        await env.state.put("services.environment.env-0", {"grpc": "127.0.0.1:5001", "replica": "env-0"})
        await env.state.put("services.environment.empty", {})
        await env.state.put("services.environment.junk", b"not json")
    async with await connect(secured, "reward") as reward:
        await reward.state.put("services.reward.evil", {"grpc": 5001, "replica": ["evil"]})
    async with await connect(secured, "rollout") as rollout:
        assert await KvReplicas(rollout.state).refresh() == ["127.0.0.1:5001"]  # the environment lookup
    assert await service_addresses(learner.state, "reward") == []  # the learner's eval lookup
    watch = HealthWatch(learner.state, alerts=None, timeout_s=0.5, kinds=("reward", "environment"))
    assert list(await watch.probe()) == ["environment/env-0"]


@pytest.mark.parametrize("kind", ["rollout", "reward", "reference", "reward_model", "environment"])
async def test_no_service_wipes_the_run_kv_with_a_rollup_header(secured, learner, kind):
    """A put to its own key with `Nats-Rollup: all` would have the server purge every other key
    of the bucket (the run version, the weights notice, the other replicas): the KV's stream
    refuses rollup headers, the put fails and every key stays."""
    run_id = secured[1]
    await learner.state.put(names.RUN_VERSION_KEY, {"version": 3, "step": 3})
    own = f"$KV.{names.kv_bucket(run_id)}.services.{kind}.roll"
    async with await connect(secured, kind) as bus:
        with pytest.raises(nats.js.errors.APIError, match="(?i)rollup"):  # the stream refuses it
            await bus.js.publish(own, b"{}", headers={"Nats-Rollup": "all"})
    kept = await learner.state.get(names.RUN_VERSION_KEY)
    assert kept is not None and kept.json() == {"version": 3, "step": 3}, f"the {kind} wiped the run KV"
