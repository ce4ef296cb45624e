"""The run's durables on a real nats-server carry each service kind's ack wait from the config:
what a killed rollout, reward or reference replica's group waits before another replica gets it."""

import pytest

from meshrl.config import ConfigError, load_config
from meshrl.transport.bus import Bus
from meshrl.transport.bus import subjects as names

pytestmark = pytest.mark.timeout(60)
BASE = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}}  # paths are checked at launch, not here


async def server_ack_waits(bus: Bus, run_id: str) -> dict[str, float]:
    waits = {}
    for stage in ("prompts", "generated", "scored", "ready"):
        info = await bus.js.consumer_info(names.stage_stream(run_id, stage), names.durable_of(stage))
        waits[info.config.durable_name] = info.config.ack_wait
    return waits


async def test_each_kinds_ack_wait_reaches_its_durable(nats_url, run_id):
    cfg = load_config(base=BASE, overrides=["reward.ack_wait_s=7", "reference.ack_wait_s=9.5"])
    bus = await Bus.connect(nats_url, run_id, name="test")
    try:
        await bus.ensure_streams(names.run_consumers(cfg.ack_waits))
        assert await server_ack_waits(bus, run_id) == {
            "rollout": 30.0,
            "reward": 7.0,
            "reference": 9.5,
            "learner": 300.0,
        }
        # A second launcher with other values updates the durables (a resumed run's new config).
        await bus.ensure_streams(names.run_consumers({"rollout": 8.0}))
        assert (await server_ack_waits(bus, run_id))["rollout"] == 8.0
    finally:
        await bus.close()


def test_the_bus_defaults_are_the_configs():
    """subjects.ACK_WAIT_S repeats config/values.py's (the bus module stays free of the config
    package's import): what `bus.ensure_streams()` makes equals a default run's durables."""
    defaults = {s.durable: s.ack_wait for s in names.run_consumers().values()}
    assert {kind: defaults[kind] for kind in ("rollout", "reward", "reference")} == load_config(base=BASE).ack_waits


def test_a_bad_ack_wait_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match="reward.ack_wait_s"):
        load_config(base=BASE, overrides=["reward.ack_wait_s=0"])
