"""Which environment names a server serves, and is the one asked for among them? A Reset
names its environment (the run config's environment.name); the SDK serves a class under its
class name unless told otherwise, so `serve(Mul)` with `environment.name: mulenv` drops every
group as "not served here" — and a health check, or a kit resetting with "" (the server's
first environment), says nothing. The contract has no call that lists names; a Reset under
a name no server serves gets the SDK's INVALID_ARGUMENT, which lists them. Another server
may answer otherwise: then the names are unknown (None) and nothing is claimed.

    names = await served_names(kit)          # ["Mul"], or None when the server does not say
    row = await name_row(kit)                # without --environment: check the one name served
"""

from __future__ import annotations

import grpc

from meshrl.api.env.v1 import env_pb2
from meshrl.cli.env_check.kit import Answer, Kit
from meshrl.cli.reward_check.table import INFO, Row
from meshrl.env_sdk.not_served import served_names_in

PROBE = "meshrl-env-check-no-such-environment"
CHECK = "environment name"
MUST = "the run config's environment.name must be"


def not_served(answer: Answer) -> tuple[str, list[str]] | None:
    """(the name asked for, the names served) when `answer` is the SDK's "not served here"."""
    return served_names_in(answer.details) if answer.code == grpc.StatusCode.INVALID_ARGUMENT else None


async def served_names(kit: Kit) -> list[str] | None:
    """Ask with a Reset under a name no server serves (closed again, should it open)."""
    episode_id = kit.new_id()
    answer = await kit.reset(episode_id, environment=PROBE)
    await kit.close(episode_id)
    named = not_served(answer)
    return named[1] if named else None


def rename_fix(asked: str, served: list[str], where: str) -> str:
    """How to make a name and a server agree; `where` is how the caller names the name."""
    cls = served[0] if len(served) == 1 else "YourClass"
    return (
        f"serve it under that name (meshrl.env_sdk: serve({{{asked!r}: {cls}}}, ...); a class alone is served "
        f"under its class name) or set {where} to {' or '.join(repr(s) for s in served)}"
    )


async def name_row(kit: Kit) -> Row | None:
    """Without --environment the kit would reset with "" (any server's first environment) and
    pass a server the run then cannot use; so the served names are asked for, a single one is
    checked under its name, and the row says which name the run config must give."""
    if kit.task.environment:
        return None
    served = await served_names(kit)
    if not served:
        return None
    if len(served) == 1:
        kit.task = with_environment(kit.task, served[0])
        return Row(CHECK, INFO, f"checked as {served[0]!r}, the one name this server serves: {MUST} {served[0]!r}")
    names = ", ".join(repr(n) for n in served)
    return Row(
        CHECK, INFO, f"this server serves {names}; checked as '' (its first); pass --environment NAME for another"
    )


def with_environment(task: env_pb2.ResetRequest, name: str) -> env_pb2.ResetRequest:
    named = env_pb2.ResetRequest()
    named.CopyFrom(task)
    named.environment = name
    return named
