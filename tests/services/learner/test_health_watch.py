"""The learner's health watch on a real NATS KV and real gRPC servers: announced replicas are
probed with grpc.health.v1; one whose server is gone is reported down by the service_down
alert after the configured number of failed probes, and cleared once it serves again."""

from meshrl.addresses import free_port
from meshrl.alerts.engine import AlertEngine
from meshrl.config.alerts import AlertsConfig
from meshrl.services.learner.health_watch import HealthWatch
from meshrl.transport.bus.registry import announce_service, withdraw_service
from meshrl.transport.rpc import start_server, stop_server


async def test_a_dead_replica_fires_service_down_after_two_failed_probes(bus):
    alive, alive_port = await start_server([])
    dead_port = free_port()  # nothing listens here: a replica that crashed without withdrawing
    await announce_service(bus.state, "reward", "reward-0", f"127.0.0.1:{alive_port}")
    await announce_service(bus.state, "rollout", "rollout-1", f"127.0.0.1:{dead_port}")
    fired = []
    engine = AlertEngine(AlertsConfig(), [fired.append])
    watch = HealthWatch(bus.state, engine, timeout_s=1.0)
    try:
        assert await watch.check_once() == {"rollout/rollout-1": False, "reward/reward-0": True}
        assert fired == []  # one failure is not yet "down" (consecutive_failures=2)
        await watch.check_once()
        assert [(a.rule, a.values["service"]) for a in fired] == [("service_down", "rollout/rollout-1")]
        await watch.check_once()
        assert len(fired) == 1  # once per episode
        # It comes back on the same address: the condition clears, nothing new fires.
        revived, _ = await start_server([], port=dead_port)
        try:
            assert (await watch.check_once())["rollout/rollout-1"] is True
            assert engine.active == set()
        finally:
            await stop_server(revived, grace=0)
        # A replica that stopped cleanly withdraws its entry and is no longer probed.
        await withdraw_service(bus.state, "rollout", "rollout-1")
        assert await watch.probe() == {"reward/reward-0": True}
    finally:
        await stop_server(alive, grace=0)


async def test_every_kind_but_the_learner_is_watched_the_reward_model_too(bus, dead_port):
    dead = dead_port  # replicas that crashed without withdrawing
    kinds = ("rollout", "reward", "reference", "reward_model", "environment", "learner")
    for kind in kinds:
        await announce_service(bus.state, kind, f"{kind}-0", f"127.0.0.1:{dead}")
    watch = HealthWatch(bus.state, AlertEngine(AlertsConfig(), []), timeout_s=0.5)
    try:
        assert await watch.probe() == {f"{kind}/{kind}-0": False for kind in kinds[:-1]}
    finally:
        for kind in kinds:
            await withdraw_service(bus.state, kind, f"{kind}-0")
