"""Start the textarena adapter: one library worker child per replica, in the interpreter that
`environment.textarena.python` names, which plays one trial game at start. A start that fails
(no interpreter, textarena not installed there, a game that is not registered or needs more
players) is a ConfigError: the service exits 2 with one line, before it serves anything."""

from __future__ import annotations

import logging

from meshrl.config import ConfigError
from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.textarena.environment import TextArenaEnvironment, textarena_environment
from meshrl.services.environment.adapters.textarena.paths import HANDLERS, init_params, python_of
from meshrl.transport.library import LibraryWorker, WorkerStartError

log = logging.getLogger("meshrl.services.environment")


async def start_textarena(settings) -> type[Environment]:
    block = settings.textarena
    worker = LibraryWorker(python_of(block), HANDLERS, "textarena", start_timeout_s=block.start_timeout_s)
    try:
        info = await worker.start(init_params(block))
    except WorkerStartError as err:
        raise ConfigError(f"environment.textarena (game {block.game!r}): {err}") from None
    log.info("textarena %s: playing %s", info.get("textarena"), info.get("game"))
    return textarena_environment(settings.name, block, worker)


async def stop_textarena(cls: type[TextArenaEnvironment]) -> None:
    await cls.worker.close()
