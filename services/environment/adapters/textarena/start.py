"""Start the textarena adapter: one library worker child per replica, in the interpreter that
`environment.textarena.python` names, which plays one trial game at start. A start that fails
(no interpreter, textarena not installed there, a game that is not registered or needs more
players) is a ConfigError: the service exits 2 with one line, before it serves anything."""

from __future__ import annotations

import logging

from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.textarena.environment import TextArenaEnvironment
from meshrl.services.environment.adapters.textarena.paths import HANDLERS, init_params, python_of
from meshrl.services.environment.adapters.worker_environment import (
    start_worker_environment,
    stop_worker_environment,
)

log = logging.getLogger("meshrl.services.environment")


async def start_textarena(settings) -> type[Environment]:
    block = settings.textarena
    cls, info = await start_worker_environment(
        TextArenaEnvironment, settings, block, HANDLERS, python_of(block), init_params(block)
    )
    log.info("textarena %s: playing %s", info.get("textarena"), info.get("game"))
    return cls


stop_textarena = stop_worker_environment
