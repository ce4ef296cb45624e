"""`EnvError`: a failure with the gRPC status the contract names for it (env.proto's header).

The SDK raises these for malformed requests, unknown episodes and a full replica; an
environment may raise them too (e.g. `EnvError.invalid("the task has no ground truth")`).
Any other exception from an environment's code becomes INTERNAL with its type and message.
"""

from __future__ import annotations

import grpc

MAX_DETAIL_CHARS = 2000  # a status message stays readable in a log line


class EnvError(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message[:MAX_DETAIL_CHARS])
        self.code = code
        self.message = message[:MAX_DETAIL_CHARS]

    @classmethod
    def invalid(cls, message: str) -> "EnvError":
        return cls(grpc.StatusCode.INVALID_ARGUMENT, message)

    @classmethod
    def not_found(cls, message: str) -> "EnvError":
        return cls(grpc.StatusCode.NOT_FOUND, message)

    @classmethod
    def finished(cls, message: str) -> "EnvError":
        return cls(grpc.StatusCode.FAILED_PRECONDITION, message)

    @classmethod
    def full(cls, message: str) -> "EnvError":
        return cls(grpc.StatusCode.RESOURCE_EXHAUSTED, message)

    @classmethod
    def unavailable(cls, message: str) -> "EnvError":
        return cls(grpc.StatusCode.UNAVAILABLE, message)


def internal(err: BaseException, where: str) -> EnvError:
    """An environment's own bug as INTERNAL, naming where it happened and what it raised."""
    return EnvError(grpc.StatusCode.INTERNAL, f"{where} raised {type(err).__name__}: {err}")
