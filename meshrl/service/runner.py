"""Run one service process: start it, let it work until done or stopped, clean up, exit.

    python -m meshrl.services.<name> --nats URL --run-id RUN --config RUN_DIR/config.yaml \
        [--replica-id ID] [the service's own flags]

Exit codes, the same for every service: 0 done, or stopped by SIGTERM/SIGINT (see
stopper.py); 2 could not start (errors.py: `<name> service: <error>` on stderr, no
traceback; also bad flags, from argparse); 1 failed while working (a traceback).

Simplification: the work is one coroutine; a service with several loops (rollout: the
weights watch and the consumer) combines them itself.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from contextlib import AsyncExitStack

from meshrl.private_files import keep_new_files_private
from meshrl.quick_exit import leave_quickly
from meshrl.service.args import parse_service_args
from meshrl.service.errors import USER_ERROR_EXIT, StartupFailed
from meshrl.service.startup import start_up
from meshrl.service.stopper import Stopper

log = logging.getLogger(__name__)
LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


def run_service(process, argv: list[str] | None = None, description: str = "") -> int:
    """The whole process (a service's `main`): flags, logging, signals, serve, exit code."""
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT)
    keep_new_files_private()  # checkpoints, traces and logs of a service started on its own
    args = parse_service_args(process, argv, description)
    try:
        asyncio.run(serve_until_signalled(process, args))
    except StartupFailed as err:
        print(err, file=sys.stderr)
        return USER_ERROR_EXIT
    except asyncio.CancelledError:
        log.warning("%s service: stopped by signal", process.name)
    log.info("%s service: exiting", process.name)
    leave_quickly()  # everything is cleaned up: no need to collect the heap again, or to hear of it
    return 0


async def serve_until_signalled(process, args: argparse.Namespace) -> None:
    stopper = Stopper()
    stopper.install(asyncio.current_task())
    await serve(process, args, stopper)


async def serve(process, args: argparse.Namespace, stopper: Stopper) -> None:
    """Start `process`, run its work until it ends or `stopper` asks, then undo the start-up
    (last part first). In-process tests call this with their own Stopper."""
    async with AsyncExitStack() as cleanups:
        ctx = await start_up(process, args, cleanups)
        await work_until_stopped(process, ctx, stopper)


async def work_until_stopped(process, ctx, stopper: Stopper) -> None:
    """Run `process.work`; on a stop request let it finish (stop_gracefully) or cancel it.
    Re-raises why the work failed; a work that was cancelled on request ends quietly."""
    work = asyncio.create_task(process.work(ctx))
    requested = asyncio.create_task(stopper.requested.wait())
    stopper.working = True
    try:
        await asyncio.wait([work, requested], return_when=asyncio.FIRST_COMPLETED)
        asked = time.monotonic()
        if not work.done() and not process.stop_gracefully(stopper.reason):
            work.cancel()
        await asyncio.wait([work])
        ctx.stopping = True
        if stopper.requested.is_set():  # in-flight messages nak'ed or finished
            log.info("%s: stop: work ended in %.2f s", ctx.replica, time.monotonic() - asked)
    finally:
        stopper.working = False
        requested.cancel()
        work.cancel()  # a no-op once it is done; needed when we are cancelled ourselves
        await asyncio.gather(work, requested, return_exceptions=True)
    if not work.cancelled():
        work.result()
