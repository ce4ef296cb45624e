"""The environment an adapter block of the run config names, as {run's environment name: class}.

    served, stop = await adapter_environments(settings)    # settings.adapter: "openenv", ...

Each adapter gives a start (ConfigError when it cannot serve: the service exits 2) and a stop
(what it holds: client sessions, a library worker), called when the service stops.
"""

from __future__ import annotations

import functools
from typing import Awaitable, Callable

from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.openenv.start import start_openenv, stop_openenv
from meshrl.services.environment.adapters.textarena.start import start_textarena, stop_textarena
from meshrl.services.environment.adapters.verifiers.start import start_verifiers, stop_verifiers

Start = Callable[..., Awaitable[type[Environment]]]
Stop = Callable[[type[Environment]], Awaitable[None]]
ADAPTERS: dict[str, tuple[Start, Stop]] = {
    "openenv": (start_openenv, stop_openenv),
    "verifiers": (start_verifiers, stop_verifiers),
    "textarena": (start_textarena, stop_textarena),
}


async def adapter_environments(settings) -> tuple[dict[str, type[Environment]], Callable[[], Awaitable[None]]]:
    start, stop = ADAPTERS[settings.adapter]
    cls = await start(settings)
    return {settings.name: cls}, functools.partial(stop, cls)
