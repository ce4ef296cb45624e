"""Start the OpenEnv adapter: check the server answers GET /health, then give the class that
plays its episodes. A server that is not there is a ConfigError: the service exits 2 with one
line, before it serves anything (the launcher checked it already; this covers `meshrl serve`)."""

from __future__ import annotations

import asyncio
import json
import urllib.request

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
    schema = await asyncio.to_thread(action_schema, block) if block.action_tool else None
    return openenv_environment(settings.name, block, schema)


def action_schema(block) -> dict:
    """The server's Action JSON Schema (GET /schema), less OpenEnv's own `metadata` field."""
    try:
        with urllib.request.urlopen(f"{block.url}/schema", timeout=min(block.timeout_s, 10.0)) as answer:
            schema = json.loads(answer.read())["action"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ConfigError(
            f"environment.openenv.action_tool: the server at {block.url} gave no action schema "
            f"(GET /schema: {type(err).__name__}: {err}); set action_field instead"
        ) from None
    fields = {k: v for k, v in schema.get("properties", {}).items() if k != "metadata" and k not in block.action_fields}
    required = [k for k in schema.get("required", []) if k in fields and k not in block.action_fields]
    return {"type": "object", "properties": fields, "required": required}


async def stop_openenv(cls: type[OpenEnvEnvironment]) -> None:
    if cls._http is not None:
        await cls._http.close()
