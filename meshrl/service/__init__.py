"""meshrl.service: the one runner every service process goes through.

A service's main.py says only what is its own, as a ServiceProcess (what it builds, what it
serves, what it consumes); `run_service` does the rest the same way for all of them:

    from meshrl.service import ServiceProcess, run_service

    class RewardProcess(ServiceProcess):
        name = "reward"
        async def prepare(self, ctx): ...   # checks and loading that need no NATS
        async def start(self, ctx): ...     # build and serve; ctx.bus is connected
        async def work(self, ctx): ...      # consume until cancelled (a stop) or failing

    def main(argv=None) -> int:
        return run_service(RewardProcess(), argv)

Files: process.py (the hooks), context.py (what a hook gets), startup.py (start-up order),
stopper.py (SIGTERM/SIGINT), errors.py (which errors mean "could not start": exit 2),
args.py (the shared flags), runner.py (serve and run_service).
"""

from meshrl.service.context import ServiceContext
from meshrl.service.process import ServiceProcess
from meshrl.service.runner import run_service, serve
from meshrl.service.stopper import Stopper

__all__ = ["ServiceContext", "ServiceProcess", "Stopper", "run_service", "serve"]
