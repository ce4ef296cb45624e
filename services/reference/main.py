"""The reference service: a NATS worker (scored → ready) plus a gRPC ReferenceService.

    python -m meshrl.services.reference --nats nats://127.0.0.1:4222 --run-id RUN \
        --config RUN_DIR/config.yaml [--replica-id reference-0]

Run by the shared service runner (meshrl.service): flags, config, tracing, the metrics
endpoint, NATS, signals, clean-up and exit codes are the same for every service.
Start-up, in order, failing with a message that names what is wrong:
  1. load the RunConfig; start the Prometheus endpoint (telemetry.metrics on
     telemetry.metrics_port; prints `METRICS http://127.0.0.1:PORT/metrics`);
  2. load the frozen reference model (`model.path`, eval, no grad; a wrong path fails
     before torch loads it), without NATS;
  3. connect to NATS and announce the metrics URL under the run KV key
     `metrics.reference.<replica>` (meshrl.telemetry.service_metrics);
  4. serve ReferenceService (+ health, reflection) on reference.grpc_port + the replica's
     number (the launcher resolves 0 to a free port; 0 here picks any free port, logged),
     put its address under `services.reference.<replica>` (the learner's health watch
     checks it), and consume `scored` with the durable `reference`.
SIGTERM/SIGINT: stop taking messages (the group in hand is acked only after its publish),
withdraw the KV entries, stop the server, close the bus. Exit 0 on a clean stop, 2 on a
config, model or NATS error (`reference service: <error>` on stderr); a consumer that dies
raises, exit 1.
"""

from __future__ import annotations

import asyncio
import logging
import re

from meshrl.inputs.models.load import resolve_model_source
from meshrl.service import ServiceContext, ServiceProcess, run_service
from meshrl.service.malloc import keep_freed_memory
from meshrl.services.reference.servicer import start_reference_server
from meshrl.services.reference.worker import DURABLE, STAGE, ReferenceWorker, reference_instruments
from meshrl.transport.rpc import stop_server

log = logging.getLogger("meshrl.services.reference")


def grpc_port(base: int, replica_id: str) -> int:
    """base + the replica's trailing number (reference-2 → base + 2); 0 stays 0 (any port)."""
    if base == 0:
        return 0
    match = re.search(r"(\d+)$", replica_id)
    return base + (int(match.group(1)) if match else 0)


class ReferenceProcess(ServiceProcess):
    name = "reference"

    async def prepare(self, ctx: ServiceContext) -> None:
        from meshrl.services.reference.scorer import (
            ReferenceScorer,
        )  # lazy: torch: after keep_freed_memory() and the model-path check (fails fast)

        resolve_model_source(ctx.cfg.model.path, ctx.cfg.model.gguf_file)  # a wrong path fails before torch loads
        self.scorer = await asyncio.to_thread(ReferenceScorer.from_config, ctx.cfg)

    async def start(self, ctx: ServiceContext) -> None:
        server, port = await start_reference_server(self.scorer, grpc_port(ctx.cfg.reference.grpc_port, ctx.replica))
        ctx.on_stop(stop_server, server, 2)
        self.worker = ReferenceWorker(ctx.bus, self.scorer, ctx.replica, reference_instruments(ctx.metrics))
        log.info(
            "%s: ReferenceService on port %d; model %s, T=%g, micro-batch %d; %s → ready",
            ctx.replica,
            port,
            ctx.cfg.model.path,
            self.scorer.temperature,
            self.scorer.micro_batch_size,
            STAGE,
        )
        await ctx.announce_grpc(port)

    async def work(self, ctx: ServiceContext) -> None:
        """Consume `scored` until cancelled; the consumer loop only ends by failing."""
        try:
            await ctx.bus.worker(
                STAGE, DURABLE, self.worker.handle, ack_wait=ctx.cfg.reference.ack_wait_s, auto_in_progress=True
            )
            raise RuntimeError(f"the {STAGE!r} consumer stopped on its own")
        finally:
            log.info("%s: stopped after %d groups", ctx.replica, self.worker.groups_done)


def main(argv: list[str] | None = None) -> int:
    keep_freed_memory()  # steps reuse their tensors' pages (meshrl/service/malloc.py)
    return run_service(ReferenceProcess(), argv, description=__doc__.splitlines()[0])
