"""Deadlines: every client call carries one (a call without `timeout=` fails before it is
sent), and a server answers before the caller's runs out (`answer_budget`).

A call with no deadline can hang a service forever on a stuck peer; gRPC has no default.
"""

from grpc import aio


def answer_budget(time_remaining: float | None) -> float | None:
    """Seconds a server may work on a call: the deadline less a margin to send the answer back."""
    if time_remaining is None:
        return None
    return max(0.0, time_remaining - min(0.5, max(0.02, 0.1 * time_remaining)))


class MissingDeadline(ValueError):
    """A gRPC call was made without `timeout=`."""


def _check(details: aio.ClientCallDetails) -> None:
    if details.timeout is None:
        method = details.method.decode() if isinstance(details.method, bytes) else details.method
        raise MissingDeadline(f"gRPC call {method} has no deadline: pass timeout=SECONDS to the stub call")


class RequireDeadline(
    aio.UnaryUnaryClientInterceptor,
    aio.UnaryStreamClientInterceptor,
    aio.StreamUnaryClientInterceptor,
    aio.StreamStreamClientInterceptor,
):
    async def intercept_unary_unary(self, continuation, client_call_details, request):
        _check(client_call_details)
        return await continuation(client_call_details, request)

    async def intercept_unary_stream(self, continuation, client_call_details, request):
        _check(client_call_details)
        return await continuation(client_call_details, request)

    async def intercept_stream_unary(self, continuation, client_call_details, request_iterator):
        _check(client_call_details)
        return await continuation(client_call_details, request_iterator)

    async def intercept_stream_stream(self, continuation, client_call_details, request_iterator):
        _check(client_call_details)
        return await continuation(client_call_details, request_iterator)


__all__ = ["MissingDeadline", "RequireDeadline", "answer_budget"]
