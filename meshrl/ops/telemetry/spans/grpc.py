"""grpc.aio interceptors that carry the trace across a gRPC hop (`traceparent` in metadata).

    channel = open_channel(addr, interceptors=[TracingClientInterceptor()])
    server, port = await start_server([...], interceptors=[TracingServerInterceptor()])

Client: a CLIENT span `grpc /pkg.Service/Method` (child of the current span), its
traceparent + baggage added to the call's metadata, ended when the call finishes with its
status code. Server: a SERVER span, child of the metadata's context, current while the
handler runs (so the handler's own spans nest under it). Health and reflection calls are not
traced. Each interceptor uses `tracer=` or, at call time, the process's current tracer; when
tracing is off the client still forwards the current trace headers and the server is a
pass-through. (opentelemetry-instrumentation-grpc is not installed here; this is the part
of it meshrl needs.)
"""
from __future__ import annotations

import asyncio
import inspect

import grpc
from grpc import aio
from opentelemetry import context as context_api, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from meshrl.ops.telemetry import tracing
from meshrl.ops.telemetry.spans.propagation import extract_context, inject_headers

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


def _finish(span, code: grpc.StatusCode, details: str | None = None) -> None:
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code != grpc.StatusCode.OK:
        span.set_status(Status(StatusCode.ERROR, f"{code.name}: {details or ''}"))
    span.end()


class TracingClientInterceptor(aio.UnaryUnaryClientInterceptor, aio.UnaryStreamClientInterceptor,
                               aio.StreamUnaryClientInterceptor, aio.StreamStreamClientInterceptor):
    def __init__(self, tracer: "tracing.Tracer | None" = None):
        self._tracer = tracer
        self._watchers: set[asyncio.Task] = set()

    async def _call(self, continuation, details, request, *, wait: bool):
        tracer = self._tracer or tracing.current_tracer()
        method = _method(details)
        if not tracer.enabled or method.startswith(UNTRACED_PREFIXES):
            return await continuation(_with_trace_metadata(details, None), request)
        span = tracer.otel.start_span(f"grpc {method}", kind=SpanKind.CLIENT, attributes=rpc_attributes(method))
        try:
            call = await continuation(_with_trace_metadata(details, trace.set_span_in_context(span)), request)
        except BaseException as err:
            span.record_exception(err)
            _finish(span, grpc.StatusCode.UNKNOWN, repr(err))
            raise
        if wait:  # unary response: the span covers the whole call
            _finish(span, await call.code(), await call.details())
        else:  # streamed response: end the span when the stream ends, without blocking the caller
            watcher = asyncio.ensure_future(self._end_when_done(call, span))
            self._watchers.add(watcher)
            watcher.add_done_callback(self._watchers.discard)
        return call

    @staticmethod
    async def _end_when_done(call, span) -> None:
        try:
            _finish(span, await call.code(), await call.details())
        except BaseException:  # noqa: BLE001 - cancelled with its loop: still end the span
            _finish(span, grpc.StatusCode.CANCELLED)

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
        if handler is None or not tracer.enabled or method.startswith(UNTRACED_PREFIXES):
            return handler
        parent = extract_context(handler_call_details.invocation_metadata or ())
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
        self.token = context_api.attach(self.parent)  # carries the client's baggage to child spans
        self.span = self.tracer.otel.start_span(f"grpc {self.method}", kind=SpanKind.SERVER,
                                                attributes=rpc_attributes(self.method))
        self.span_token = context_api.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, exc_type, exc, tb) -> bool:
        context_api.detach(self.span_token)
        context_api.detach(self.token)
        code = _context_code(self.grpc_context)
        if exc is not None and not isinstance(exc, GeneratorExit):
            self.span.record_exception(exc)
            code = code if code not in (None, grpc.StatusCode.OK) else grpc.StatusCode.UNKNOWN
        _finish(self.span, code or grpc.StatusCode.OK, repr(exc) if exc is not None else None)
        return False


__all__ = ["TracingClientInterceptor", "TracingServerInterceptor", "rpc_attributes"]
