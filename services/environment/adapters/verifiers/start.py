"""Start the verifiers adapter: one library worker child per replica, in the interpreter that
`environment.verifiers.python` names, loading the module's environment once. A start that
fails (no interpreter, verifiers or the module not installed there, load_environment raising,
an environment the adapter cannot play) is a ConfigError: the service exits 2 with one line,
before it serves anything."""

from __future__ import annotations

import logging

from meshrl.config import ConfigError
from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.verifiers.environment import VerifiersEnvironment, verifiers_environment
from meshrl.services.environment.adapters.verifiers.paths import HANDLERS, init_params, python_of
from meshrl.transport.library import LibraryWorker, WorkerStartError

log = logging.getLogger("meshrl.services.environment")


async def start_verifiers(settings) -> type[Environment]:
    block = settings.verifiers
    worker = LibraryWorker(python_of(block), HANDLERS, "verifiers", start_timeout_s=block.start_timeout_s)
    try:
        info = await worker.start(init_params(block))
    except WorkerStartError as err:
        raise ConfigError(f"environment.verifiers (module {block.module!r}): {err}") from None
    log.info(
        "verifiers %s: %s, %s rows, tools %s, rubric %s", block.module, info.get("env"),
        info.get("rows"), [t["name"] for t in info.get("tools", [])], info.get("rubric"),
    )  # fmt: skip
    return verifiers_environment(settings.name, block, worker)


async def stop_verifiers(cls: type[VerifiersEnvironment]) -> None:
    await cls.worker.close()
