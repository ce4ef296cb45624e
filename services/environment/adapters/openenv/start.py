"""Start the OpenEnv adapter: check the server answers GET /health, then give the class that
plays its episodes. A server that is not there is a ConfigError: the service exits 2 with one
line, before it serves anything (the launcher checked it already; this covers `meshrl serve`)."""

from __future__ import annotations

import asyncio

from meshrl.config import ConfigError
from meshrl.env_sdk import Environment
from meshrl.services.environment.adapters.openenv.environment import OpenEnvEnvironment, openenv_environment
from meshrl.transport.http_health import http_health


async def start_openenv(settings) -> type[Environment]:
    block = settings.openenv
    reason = await asyncio.to_thread(http_health, block.url, min(block.timeout_s, 10.0))
    if reason:
        raise ConfigError(
            f"environment.openenv.url={block.url!r}: the OpenEnv server is not there ({reason}); "
            f"start it first (its own process or container) or fix the url"
        )
    return openenv_environment(settings.name, block)


async def stop_openenv(cls: type[OpenEnvEnvironment]) -> None:
    if cls._http is not None:
        await cls._http.close()
