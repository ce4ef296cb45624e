"""grpc.aio interceptors that carry the trace across a gRPC hop (`traceparent` in metadata).

    channel = open_channel(addr, interceptors=[TracingClientInterceptor()])
    server, port = await start_server([...], interceptors=[TracingServerInterceptor()])

Client: a CLIENT span `grpc /pkg.Service/Method` (child of the current span), its
traceparent + baggage added to the call's metadata, ended when the call finishes with its
status code and the peer (`server.address`/`server.port`, from the channel's target).
Server: a SERVER span, child of the metadata's context, current while the handler runs (so
the handler's own spans nest under it), with the caller as `network.peer.address`/`.port`.
Health and reflection calls are not traced. Each interceptor uses `tracer=` or, at call
time, the process's current tracer; when tracing is off the client still forwards the
current trace headers and the server makes no span. Tracing on or off, every call's latency
goes to meshrl_rpc_duration_seconds (latency.record_rpc). Why not
opentelemetry-instrumentation-grpc: its aio interceptors make spans but no latency
histograms, and would bypass the baggage (run id, policy version) meshrl forwards.
"""

from __future__ import annotations

import asyncio
import inspect
import time

import grpc
from grpc import aio
from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from meshrl.telemetry import tracing
from meshrl.telemetry.latency import record_rpc
from meshrl.telemetry.spans.propagation import extract_context, inject_headers

UNTRACED_PREFIXES = ("/grpc.health.", "/grpc.reflection.")


def _method(details) -> str:
    method = details.method
    return method.decode() if isinstance(method, bytes) else method


def rpc_attributes(method: str) -> dict:
    service, _, name = method.lstrip("/").rpartition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}


def _with_trace_metadata(details, ctx) -> aio.ClientCallDetails:
    metadata = aio.Metadata(*(tuple(details.metadata or ())))
    for key, value in inject_headers(context=ctx).items():
        metadata.add(key, value)
    return details._replace(metadata=metadata)


def target_attributes(target: str | None) -> dict:
    """`host:port` (a channel target) as server.address / server.port."""
    if not target:
        return {}
    target = target.split("///")[-1]  # dns:///host:port
    host, _, port = target.rpartition(":")
    if not port.isdigit():
        return {"server.address": target}
    return {"server.address": host.strip("[]"), "server.port": int(port)}


def peer_attributes(peer: str | None) -> dict:
    """grpc's `ipv4:127.0.0.1:5000` / `ipv6:[::1]:5000` as network.peer.address / .port."""
    if not peer:
        return {}
    _, _, address = peer.partition(":")
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return {"network.peer.address": address or peer}
    return {"network.peer.address": host.strip("[]"), "network.peer.port": int(port)}


class _Call:
    """One call's span (None when tracing is off) and clock; `finish` ends both once."""

    def __init__(self, side: str, method: str, span):
        self.side, self.method, self.span, self.start = side, method, span, time.perf_counter()

    def finish(self, code: grpc.StatusCode, details: str | None = None) -> None:
        record_rpc(self.side, self.method, code.name, time.perf_counter() - self.start)
        if self.span is None:
            return
        self.span.set_attribute("rpc.grpc.status_code", code.value[0])
        if code != grpc.StatusCode.OK:
            self.span.set_status(Status(StatusCode.ERROR, f"{code.name}: {details or ''}"))
        self.span.end()


class TracingClientInterceptor(
    aio.UnaryUnaryClientInterceptor,
    aio.UnaryStreamClientInterceptor,
    aio.StreamUnaryClientInterceptor,
    aio.StreamStreamClientInterceptor,
):
    def __init__(self, tracer: "tracing.Tracer | None" = None, target: str | None = None):
        self._tracer = tracer
        self._peer = target_attributes(target)
        self._watchers: set[asyncio.Task] = set()

    def _start(self, tracer, method: str) -> _Call:
        span = None
        if tracer.enabled:
            span = tracer.otel.start_span(
                f"grpc {method}", kind=SpanKind.CLIENT, attributes={**rpc_attributes(method), **self._peer}
            )
        return _Call("client", method, span)

    async def _call(self, continuation, details, request, *, wait: bool):
        tracer = self._tracer or tracing.current_tracer()
        method = _method(details)
        if method.startswith(UNTRACED_PREFIXES):
            return await continuation(_with_trace_metadata(details, None), request)
        rpc = self._start(tracer, method)
        ctx = trace.set_span_in_context(rpc.span) if rpc.span is not None else None
        try:
            call = await continuation(_with_trace_metadata(details, ctx), request)
        except BaseException as err:
            if rpc.span is not None:
                rpc.span.record_exception(err)
            rpc.finish(grpc.StatusCode.UNKNOWN, repr(err))
            raise
        if wait:  # unary response: the span covers the whole call
            rpc.finish(await call.code(), await call.details())
        else:  # streamed response: end the span when the stream ends, without blocking the caller
            watcher = asyncio.ensure_future(self._end_when_done(call, rpc))
            self._watchers.add(watcher)
            watcher.add_done_callback(self._watchers.discard)
        return call

    @staticmethod
    async def _end_when_done(call, rpc: _Call) -> None:
        try:
            rpc.finish(await call.code(), await call.details())
        except BaseException:  # noqa: BLE001 - cancelled with its loop: still end the span
            rpc.finish(grpc.StatusCode.CANCELLED)

    async def intercept_unary_unary(self, continuation, client_call_details, request):
        return await self._call(continuation, client_call_details, request, wait=True)

    async def intercept_unary_stream(self, continuation, client_call_details, request):
        return await self._call(continuation, client_call_details, request, wait=False)

    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        return await self._call(continuation, client_call_details, request_iterator, wait=True)

    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        return await self._call(continuation, client_call_details, request_iterator, wait=False)


class TracingServerInterceptor(aio.ServerInterceptor):
    def __init__(self, tracer: "tracing.Tracer | None" = None):
        self._tracer = tracer

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        tracer = self._tracer or tracing.current_tracer()
        method = handler_call_details.method
        if handler is None or method.startswith(UNTRACED_PREFIXES):
            return handler
        parent = extract_context(handler_call_details.invocation_metadata or ()) if tracer.enabled else None
        field = _behaviour_field(handler)
        wrapped = _traced_behaviour(getattr(handler, field), tracer, method, parent)
        return handler._replace(**{field: wrapped})


def _behaviour_field(handler) -> str:
    if handler.request_streaming:
        return "stream_stream" if handler.response_streaming else "stream_unary"
    return "unary_stream" if handler.response_streaming else "unary_unary"


def _traced_behaviour(behaviour, tracer, method: str, parent):
    if inspect.isasyncgenfunction(behaviour):

        async def streamed(request, context):
            with _ServerSpan(tracer, method, parent, context):
                async for response in behaviour(request, context):
                    yield response

        return streamed

    async def unary(request, context):
        with _ServerSpan(tracer, method, parent, context):
            result = behaviour(request, context)
            return await result if inspect.isawaitable(result) else result

    return unary


def _context_code(context) -> grpc.StatusCode | None:
    """The code a handler set (set_code / abort); None when it set none."""
    try:
        return context.code()
    except Exception:  # noqa: BLE001 - a context without code(): nothing set
        return None


class _ServerSpan:
    """The SERVER span of one call, current while the handler runs; status from the outcome."""

    def __init__(self, tracer, method: str, parent, grpc_context):
        self.tracer, self.method, self.parent, self.grpc_context = tracer, method, parent, grpc_context

    def __enter__(self):
        span = None
        if self.parent is not None:  # tracing on
            self.token = context_api.attach(self.parent)  # carries the client's baggage to child spans
            attrs = {**rpc_attributes(self.method), **peer_attributes(_peer(self.grpc_context))}
            span = self.tracer.otel.start_span(f"grpc {self.method}", kind=SpanKind.SERVER, attributes=attrs)
            self.span_token = context_api.attach(trace.set_span_in_context(span))
        self.rpc = _Call("server", self.method, span)
        return span

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self.rpc.span is not None:
            context_api.detach(self.span_token)
            context_api.detach(self.token)
        code = _context_code(self.grpc_context)
        if exc is not None and not isinstance(exc, GeneratorExit):
            if self.rpc.span is not None:
                self.rpc.span.record_exception(exc)
            code = code if code not in (None, grpc.StatusCode.OK) else grpc.StatusCode.UNKNOWN
        self.rpc.finish(code or grpc.StatusCode.OK, repr(exc) if exc is not None else None)
        return False


def _peer(context) -> str | None:
    try:
        return context.peer()
    except Exception:  # noqa: BLE001 - a test double without peer(): no address
        return None


__all__ = [
    "TracingClientInterceptor",
    "TracingServerInterceptor",
    "rpc_attributes",
    "target_attributes",
    "peer_attributes",
]
