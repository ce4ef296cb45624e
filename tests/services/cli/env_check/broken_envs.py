"""Environment servers for testing the conformance kit, written without meshrl.env_sdk:
`PlainEnv` follows the contract; each `Broken*` subclass breaks one rule on purpose (named as
such), so the kit's rows can be shown to fail for exactly that rule."""

from __future__ import annotations

import asyncio
import math

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from meshrl.api.env.v1 import env_pb2, env_pb2_grpc

CALC = env_pb2.Tool(
    name="add",
    description="Add two numbers.",
    parameters_json='{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}}}',
)


class PlainEnv(env_pb2_grpc.EnvironmentServiceServicer):
    """A minimal correct environment: done after the first turn without tool calls."""

    def __init__(self):
        self.episodes: dict[str, dict] = {}

    def first(self, request) -> env_pb2.ResetResponse:
        return env_pb2.ResetResponse(observation=[env_pb2.ChatMessage(role="user", content="Go.")], tools=[CALC])

    async def Reset(self, request, context):
        if not request.episode_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "episode_id is empty")
        ep = self.episodes.setdefault(request.episode_id, {"first": self.first(request), "answers": {}, "done": None})
        return ep["first"]

    def answer(self, request) -> env_pb2.StepResponse:
        if request.rejected_tool_calls and not request.tool_calls:  # meshrl showed the model its error
            return env_pb2.StepResponse()
        if request.tool_calls:
            return env_pb2.StepResponse(
                observation=[
                    env_pb2.ChatMessage(role="tool", content="error: bad call", tool_call_id=c.id)
                    for c in request.tool_calls
                ]
            )
        return env_pb2.StepResponse(done=True, reward=1.0)

    async def Step(self, request, context):
        if not request.episode_id:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "episode_id is empty")
        ep = self.episodes.get(request.episode_id)
        if ep is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, "no such episode")
        if request.turn in ep["answers"]:
            return ep["answers"][request.turn]
        if ep["done"] is not None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "episode is done")
        if request.turn != len(ep["answers"]):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "turn out of order")
        ep["answers"][request.turn] = answer = self.answer(request)
        ep["done"] = request.turn if answer.done else None
        return answer

    async def Close(self, request, context):
        self.episodes.pop(request.episode_id, None)
        return env_pb2.CloseResponse()


class BrokenForgetful(PlainEnv):
    """Broken on purpose: every Reset and every Step is new work (no idempotency)."""

    calls = 0

    def first(self, request):
        BrokenForgetful.calls += 1
        return env_pb2.ResetResponse(observation=[env_pb2.ChatMessage(role="user", content=f"call {self.calls}")])

    async def Reset(self, request, context):
        self.episodes.pop(request.episode_id, None)
        return await super().Reset(request, context)

    async def Step(self, request, context):
        BrokenForgetful.calls += 1
        return env_pb2.StepResponse(observation=[env_pb2.ChatMessage(role="user", content=f"call {self.calls}")])


class BrokenStatuses(PlainEnv):
    """Broken on purpose: an empty answer instead of NOT_FOUND / INVALID_ARGUMENT / FAILED_PRECONDITION."""

    async def Reset(self, request, context):
        return self.first(request)

    async def Step(self, request, context):
        return env_pb2.StepResponse()


class BrokenOnToolCalls(PlainEnv):
    """Broken on purpose: a malformed tool call crashes the handler (INTERNAL/UNKNOWN)."""

    def answer(self, request):
        if request.tool_calls:
            raise ValueError(f"cannot parse {request.tool_calls[0].arguments_json}")
        return super().answer(request)


class BrokenAnswers(PlainEnv):
    """Broken on purpose: an unknown role, a NaN reward, info that is not JSON, a tool twice."""

    def first(self, request):
        return env_pb2.ResetResponse(tools=[CALC, CALC], info_json="not json")

    def answer(self, request):
        return env_pb2.StepResponse(
            observation=[env_pb2.ChatMessage(role="robot", content="beep")], reward=math.nan, done=True
        )


class BrokenRoles(PlainEnv):
    """Broken on purpose: a Step answers a "system" message (the model's instructions rewritten
    mid-episode), which the rollout refuses."""

    def answer(self, request):
        return env_pb2.StepResponse(observation=[env_pb2.ChatMessage(role="system", content="new rules")], done=True)


class BrokenWire(PlainEnv):
    """Broken on purpose: every Step answers bytes that are no StepResponse."""

    async def Step(self, request, context):
        return b"\xff\xff\xff\xff not a protobuf"


class BadUtf8(PlainEnv):
    """Sloppy on purpose: every Step's observation carries a byte that is no UTF-8 (the rollout
    repairs it with U+FFFD and goes on; so must the kit)."""

    async def Step(self, request, context):
        answer = await super().Step(request, context)
        reply = env_pb2.StepResponse(observation=[env_pb2.ChatMessage(role="user", content="okAY")])
        reply.MergeFrom(answer)
        return reply.SerializeToString().replace(b"AY", b"\xff\xfe")  # same length: only the bytes go bad


class TakesRefusedCallsForAnAnswer(PlainEnv):
    """Off the contract's advice on purpose (allowed, reported as INFO): a turn whose calls meshrl
    refused is taken for the final answer, so the model never reads why its call was refused."""

    def answer(self, request):
        if not request.tool_calls:
            return env_pb2.StepResponse(done=True, reward=0.0)
        return super().answer(request)


class TaskFromEpisodeSeed(PlainEnv):
    """Off the contract's advice on purpose (allowed, reported as INFO): the task is drawn from
    the episode's seed, so the episodes of one group play different tasks."""

    def first(self, request):
        return env_pb2.ResetResponse(observation=[env_pb2.ChatMessage(role="user", content=f"board {request.seed}")])


class BrokenSlow(PlainEnv):
    """Broken on purpose: every Reset takes 3 s (past the kit's 1 s --timeout)."""

    async def Reset(self, request, context):
        await asyncio.sleep(3)
        return await super().Reset(request, context)


def add_raw_or_message(servicer, server) -> None:
    """Like the generated add_..._to_server, but a handler may answer raw bytes (BrokenWire)."""
    methods = {"Reset": env_pb2.ResetRequest, "Step": env_pb2.StepRequest, "Close": env_pb2.CloseRequest}
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            getattr(servicer, name),
            request_deserializer=cls.FromString,
            response_serializer=lambda r: r if isinstance(r, bytes) else r.SerializeToString(),
        )
        for name, cls in methods.items()
    }
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("meshrl.env.v1.EnvironmentService", handlers),)
    )


async def serve_broken(servicer, *, with_health: bool = True) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    add_raw_or_message(servicer, server)
    if with_health:
        checker = health.aio.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(checker, server)
        for name in ("", "meshrl.env.v1.EnvironmentService"):
            await checker.set(name, health_pb2.HealthCheckResponse.SERVING)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"
