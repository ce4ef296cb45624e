"""What one caller may make the gateway hold: request bytes, and streams that follow a run.

- A request is at most MAX_REQUEST_BYTES (gRPC and HTTP alike): the largest is SubmitRun's
  YAML. gRPC calls without a known token are refused before their message is read
  (api/grpc_server.py), so an anonymous caller cannot make the gateway parse anything.
- A following stream (SSE or a gRPC Stream* with follow) holds a task and a file handle
  until the run ends: at most MAX_FOLLOWS_PER_USER per token holder and MAX_FOLLOWS in all;
  one more is refused with RESOURCE_EXHAUSTED (HTTP 429) saying how many are open.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Iterator

import grpc

from meshrl.gateway.errors import GatewayError

MAX_REQUEST_BYTES = 1 << 20
MAX_FOLLOWS_PER_USER = 8
MAX_FOLLOWS = 64


class FollowSlots:
    """Counts open following streams per user; `taken(name)` holds one for a block."""

    def __init__(self, per_user: int = MAX_FOLLOWS_PER_USER, total: int = MAX_FOLLOWS):
        self.per_user, self.total, self.open = per_user, total, Counter()

    @contextlib.contextmanager
    def taken(self, user: str) -> Iterator[None]:
        if self.open[user] >= self.per_user or sum(self.open.values()) >= self.total:
            raise GatewayError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{user} has {self.open[user]} live streams open (at most {self.per_user} per "
                f"user, {self.total} in all): close one (another tab or client) and retry",
            )
        self.open[user] += 1
        try:
            yield
        finally:
            self.open[user] -= 1
