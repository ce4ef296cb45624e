"""The reference service (in this process, through the shared runner's serve(), on the tiny
model and a real nats-server) serves Prometheus metrics: announced in the run KV, counting
groups and sequences scored, with the resource gauges under service="reference"; withdrawn
on stop.

In-process rather than `python -m`: a fresh process imports torch (10-40 s here), and the
process path is covered by test_worker.py's slow test; what is checked here is the wiring."""

import argparse
import asyncio

from meshrl.config.load import dump_config, load_config
from meshrl.service import Stopper, serve
from meshrl.services.reference.main import ReferenceProcess
from meshrl.telemetry.service_metrics import metrics_key
from tests.fixtures.prometheus import metrics_url, promtool_check, sample, wait_for_sample
from tests.services.reference.test_worker import RESPONSES, make_group, pull_one

GROUPS = 2


def write_config(tmp_path, model_dir) -> str:
    cfg = load_config(
        base={
            "run": {"dir": str(tmp_path / "run")},
            "model": {"path": str(model_dir)},
            "data": {"train": "x.jsonl"},
            "algorithm": {"preset": "grpo"},
            "telemetry": {"tracing": False},
        }
    )  # no process-wide tracer in the test
    path = tmp_path / "config.yaml"
    path.write_text(dump_config(cfg))
    return str(path)


async def test_metrics_count_groups_and_sequences(bus, nats_url, run_id, tmp_path, tiny_model_dir):
    args = argparse.Namespace(
        nats=nats_url, run_id=run_id, replica_id="reference-m", config=write_config(tmp_path, tiny_model_dir)
    )
    stopper = Stopper()
    service = asyncio.create_task(serve(ReferenceProcess(), args, stopper))
    try:
        url = await metrics_url(bus.state, "reference", "reference-m")
        for i in range(GROUPS):
            await bus.publish("scored", make_group(run_id, f"g-{i}"), msg_id=f"g-{i}")
            await pull_one(bus)
        ids = dict(service="reference", replica="reference-m", run=run_id)
        text = await wait_for_sample(url, "meshrl_groups_scored_total", GROUPS, **ids)
    finally:
        stopper.request()
        await asyncio.wait_for(service, 30)
    assert sample(text, "meshrl_groups_scored_total", **ids) == GROUPS
    assert sample(text, "meshrl_sequences_scored_total", **ids) == GROUPS * len(RESPONSES)
    assert sample(text, "process_resident_memory_bytes") > 0  # prometheus_client's process collector
    promtool_check(text)
    assert await bus.state.get(metrics_key("reference", "reference-m")) is None
