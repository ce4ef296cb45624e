"""Which service kinds may call which methods of a mesh gRPC server.

Under mutual TLS (`launch.grpc_tls: mutual`, the default) every process of a run presents the
certificate of its kind, `meshrl-<kind>`, signed by the run's own CA (meshrl.launch.secrets),
so the caller's kind is known and cannot be claimed by anyone else. Any run certificate used
to be good for every method of every service: a rollout could pause the learner. Here each
server (its kind read from its own certificate) allows each method to the kinds that call it
(each kind's `grpc_service` and `callers` in meshrl/topology.py):

    learner      LearnerControlService          admin (meshrl status/pause/..., the gateway)
    rollout      RolloutService                 learner (eval), admin
    reward       RewardService                  learner (eval), admin
    reward_model RewardService                  reward, admin
    reference    ReferenceService               learner (DPO, KL), admin
    environment  EnvironmentService             rollout (episodes), admin
    every server grpc.health.v1, reflection     any run certificate

Anything else is refused with PERMISSION_DENIED naming the method, the caller's kind and the
kinds allowed. Without client certificates (grpc_tls: on, or off) there is no kind to check:
nothing is refused here (TLS "on" encrypts, "mutual" also authorises).
"""

from __future__ import annotations

import inspect

import grpc
from grpc import aio

from meshrl import topology

OPEN = ("/grpc.health.v1.Health/", "/grpc.reflection.")
# server kind -> {method prefix: the kinds that may call it}, from the topology's callers.
POLICY = {k.name: {f"/{k.grpc_service}/": {*k.callers, topology.ADMIN}} for k in topology.KIND_TABLE}
ADMIN_ONLY = frozenset({topology.ADMIN})


def allowed_kinds(server_kind: str, method: str) -> frozenset[str] | None:
    """The caller kinds that may call `method` on a `server_kind` server; None = any caller."""
    if method.startswith(OPEN):
        return None
    for prefix, kinds in POLICY.get(server_kind, {}).items():
        if method.startswith(prefix):
            return frozenset(kinds)
    return ADMIN_ONLY


def caller_kind(context) -> str | None:
    """The kind in the caller's verified certificate (`meshrl-<kind>`), or None."""
    names = (context.auth_context() or {}).get("x509_common_name") or []
    name = names[0].decode() if names else ""
    return name.removeprefix("meshrl-") if name.startswith("meshrl-") else None


class KindAuthorization(aio.ServerInterceptor):
    def __init__(self, server_kind: str):
        self.server_kind = server_kind

    async def intercept_service(self, continuation, details):
        handler = await continuation(details)
        allowed = allowed_kinds(self.server_kind, details.method)
        if handler is None or allowed is None:
            return handler
        return _guarded(handler, allowed, details.method, self.server_kind)


def _guarded(handler, allowed: frozenset[str], method: str, server_kind: str):
    async def check(context) -> None:
        kind = caller_kind(context)
        if kind not in allowed:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{method} on the {server_kind} is not for {kind or 'a caller without a run certificate'}"
                f" (allowed: {', '.join(sorted(allowed))})",
            )

    if handler.unary_unary is not None:
        return handler._replace(unary_unary=_unary(handler.unary_unary, check))
    if handler.unary_stream is not None:
        return handler._replace(unary_stream=_streaming(handler.unary_stream, check))
    if handler.stream_unary is not None:
        return handler._replace(stream_unary=_unary(handler.stream_unary, check))
    return handler._replace(stream_stream=_streaming(handler.stream_stream, check))


def _unary(behaviour, check):
    async def guarded(request, context):
        await check(context)
        result = behaviour(request, context)
        return await result if inspect.isawaitable(result) else result

    return guarded


def _streaming(behaviour, check):
    async def guarded(request, context):
        await check(context)
        results = behaviour(request, context)
        if inspect.isasyncgen(results):
            async for item in results:
                yield item
        elif inspect.isawaitable(results):  # a handler that streams with context.write()
            await results
        else:
            for item in results:
                yield item

    return guarded
