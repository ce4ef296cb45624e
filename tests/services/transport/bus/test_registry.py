"""The run KV's service registry read with each service's own NATS user, on a real nats-server
with the run's generated permissions: the rollout lists the environment's replicas (it may
not create the consumer that listing keys needs: issue 23), a withdrawn replica is gone, a
restarted one's new address replaces the old, and other keys of the bucket do not show."""

import pytest

from meshrl.transport.bus.registry import announce_service, service_addresses, service_entries, withdraw_service
from tests.fixtures.nats import connect_as

pytestmark = [pytest.mark.timeout(120), pytest.mark.usefixtures("no_ambient_credentials")]


async def test_the_rollout_lists_environment_replicas_without_a_consumer(secured):
    async with (
        await connect_as(secured, "environment") as env,
        await connect_as(secured, "rollout") as rollout,
        await connect_as(secured, "learner") as learner,
    ):
        await learner.ensure_streams()
        for replica, port in (("environment-0", 5000), ("environment-1", 5001), ("environment-2", 5002)):
            await announce_service(env.state, "environment", replica, f"127.0.0.1:{port}")
        await announce_service(rollout.state, "rollout", "rollout-0", "127.0.0.1:6000")
        await learner.state.put("weights_version", {"version": 3})
        await withdraw_service(env.state, "environment", "environment-1")
        await announce_service(env.state, "environment", "environment-0", "127.0.0.1:5010")  # restarted
        assert await service_addresses(rollout.state, "environment") == ["127.0.0.1:5010", "127.0.0.1:5002"]
        assert [e["replica"] for e in await service_entries(rollout.state, "rollout")] == ["rollout-0"]
        assert await service_addresses(rollout.state, "reward") == []
        with pytest.raises(Exception, match="[Pp]ermissions violation"):
            await rollout.state.keys()  # what the registry no longer needs
