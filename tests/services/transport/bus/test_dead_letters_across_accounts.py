"""A message whose every delivery timed out is dead-lettered by the reward's own NATS user, from
its own account: the server's MAX_DELIVERIES advisory (published in the run's account) reaches
it through its stream import, and it reads, dead-letters and deletes the message through its
service imports (meshrl.transport.bus.accounts).

A real nats-server with the run's generated users; the reward pulls its input twice without
acking, as a reward whose handler hung twice would.

Run: .venv/bin/python -m pytest tests/services/transport/bus/test_dead_letters_across_accounts.py -q
"""

import asyncio
import json

import nats.errors
import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.transport.bus import subjects as names
from meshrl.transport.bus.consumer import ConsumerSpec
from meshrl.transport.bus.dead import ERROR_HEADER, dead_letter_exhausted, max_deliveries_advisory
from tests.fixtures.nats import connect_as

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_ambient_credentials")]


async def test_the_reward_dead_letters_an_exhausted_message_from_its_own_account(secured):
    run_id = secured[1]
    consumers = names.run_consumers() | {"generated": ConsumerSpec("reward", ack_wait=0.5, max_deliver=2)}
    users = ("learner", "rollout", "reward", "admin")
    learner, rollout, reward, admin = [await connect_as(secured, user) for user in users]
    try:
        await learner.ensure_streams(consumers=consumers)
        advisories = await reward.nc.subscribe(max_deliveries_advisory(run_id, "generated", "reward"))
        await rollout.publish("generated", common_pb2.Group(group_id="hung"), msg_id="hung")
        pull = await reward.js.pull_subscribe_bind("reward", names.stage_stream(run_id, "generated"))
        for _ in range(2):  # fetched, never acked: the handler "hung"
            assert len(await pull.fetch(1, timeout=5)) == 1
            await asyncio.sleep(0.8)
        with pytest.raises(nats.errors.TimeoutError):  # nothing left to deliver: the server gave up on it
            await pull.fetch(1, timeout=1)
        advisory = await advisories.next_msg(timeout=10)
        await dead_letter_exhausted(reward.js, run_id, "generated", advisory.data)
        letter = await admin.js.get_last_msg(  # the operator reads the dead letters
            names.dead_stream(run_id), names.dead_subject(run_id)
        )
        assert common_pb2.Group.FromString(letter.data).group_id == "hung"
        assert letter.headers[ERROR_HEADER].startswith("DeliveriesExhausted")
        assert json.loads(advisory.data)["deliveries"] == 2
        assert (await learner.js.stream_info(names.stage_stream(run_id, "generated"))).state.messages == 0
    finally:
        for bus in (learner, rollout, reward, admin):
            await bus.close()
