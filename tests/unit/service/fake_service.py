"""A tiny service run through the shared runner, for tests/unit/service/test_service_runner.py.

    python tests/unit/service/fake_service.py --nats URL --run-id RUN --config CONFIG \
        --journal FILE [--fail-in prepare|start|work] [--hang-in prepare]

It builds nothing real: each hook appends one line to --journal (what ran, in order), so a
test can see that the clean-ups ran after a SIGTERM or a failure. `start` announces a made-up
gRPC port in the run KV and prints READY; `work` waits until cancelled. --fail-in raises
ConnectionError (a start-up error the runner maps to exit 2) in that hook; --hang-in prepare
prints PREPARING and sleeps, to stop it during start-up.
"""

import argparse
import asyncio
import sys

from meshrl.service import ServiceContext, ServiceProcess, run_service

FAKE_GRPC_PORT = 45678


class FakeProcess(ServiceProcess):
    name = "fake"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--journal", required=True)
        parser.add_argument("--fail-in", choices=["prepare", "start", "work"], default=None)
        parser.add_argument("--hang-in", choices=["prepare"], default=None)

    def note(self, ctx: ServiceContext, line: str) -> None:
        with open(ctx.args.journal, "a") as f:
            f.write(line + "\n")

    def maybe_fail(self, ctx: ServiceContext, hook: str) -> None:
        if ctx.args.fail_in == hook:
            raise ConnectionError(f"made-up dependency at 127.0.0.1:1 is not reachable (in {hook})")

    async def prepare(self, ctx: ServiceContext) -> None:
        self.note(ctx, "prepare")
        ctx.on_stop(self.note, ctx, "undo prepare")
        if ctx.args.hang_in == "prepare":
            print("PREPARING", flush=True)
            await asyncio.sleep(3600)
        self.maybe_fail(ctx, "prepare")

    async def start(self, ctx: ServiceContext) -> None:
        self.note(ctx, "start")
        ctx.on_stop(self.note, ctx, "undo start")
        self.maybe_fail(ctx, "start")
        await ctx.announce_grpc(FAKE_GRPC_PORT)
        print(f"READY replica={ctx.replica}", flush=True)

    async def work(self, ctx: ServiceContext) -> None:
        self.note(ctx, "work")
        self.maybe_fail(ctx, "work")
        try:
            await asyncio.Event().wait()
        finally:
            self.note(ctx, "work ended")


if __name__ == "__main__":
    sys.exit(run_service(FakeProcess()))
