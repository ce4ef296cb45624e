"""`meshrl status` shows where a rollout replica runs: the tensor-parallel workers and CPU
cores it announced in the run KV (a real nats-server), in its JSON rows and in the table."""

from meshrl.cli.status import replica_table
from meshrl.run.status import replica_rows
from meshrl.transport.bus.registry import announce_service


async def test_a_tp_replicas_workers_and_cores_are_shown(bus):
    await announce_service(bus.state, "rollout", "rollout-0", "127.0.0.1:9", workers=2, cores="0|1")
    await announce_service(bus.state, "reward", "reward-0", "127.0.0.1:8")
    rows = await replica_rows(bus.state, timeout_s=0.5)
    rollout = next(r for r in rows if r["service"] == "rollout")
    reward = next(r for r in rows if r["service"] == "reward")
    assert (rollout["workers"], rollout["cores"]) == (2, "0|1") and "workers" not in reward
    table = replica_table(rows).splitlines()
    assert table[0].split()[-2:] == ["WORKERS", "CORES"]
    assert next(line for line in table if line.startswith("rollout")).split()[-2:] == ["2", "0|1"]
