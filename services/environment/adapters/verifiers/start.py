"""Start the verifiers adapter: one library worker child per replica, in the interpreter that
`environment.verifiers.python` names, loading the module's environment once. A start that
fails (no interpreter, verifiers or the module not installed there, load_environment raising,
an environment the adapter cannot play) is a ConfigError: the service exits 2 with one line,
before it serves anything."""

from __future__ import annotations

import logging

from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.verifiers.environment import VerifiersEnvironment
from meshrl.services.environment.adapters.verifiers.paths import HANDLERS, init_params, python_of
from meshrl.services.environment.adapters.worker_environment import (
    start_worker_environment,
    stop_worker_environment,
)

log = logging.getLogger("meshrl.services.environment")


async def start_verifiers(settings) -> type[Environment]:
    block = settings.verifiers
    cls, info = await start_worker_environment(
        VerifiersEnvironment, settings, block, HANDLERS, python_of(block), init_params(block)
    )
    log.info(
        "verifiers %s: %s, %s rows, tools %s, rubric %s", block.module, info.get("env"),
        info.get("rows"), [t["name"] for t in info.get("tools", [])], info.get("rubric"),
    )  # fmt: skip
    return cls


stop_verifiers = stop_worker_environment
