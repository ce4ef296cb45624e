"""Turn a plain Python function into a served reward service (meshrl.reward.v1.RewardService).

    from meshrl.reward_sdk import Item, serve

    def reward(item: Item) -> float:                  # or -> (float, {"name": float, ...})
        return float(str(item.ground_truth) in item.response)  # ground_truth: decoded JSON

    serve(reward, port=50070)                         # blocks; SIGTERM/Ctrl-C stops it

What you get: the gRPC RewardService from protos/meshrl/reward/v1/reward.proto, the
grpc.health.v1 health service (required by meshrl) and reflection, a server span per call
joined to the caller's trace (exported when OTEL_EXPORTER_OTLP_ENDPOINT is set), items
scored concurrently in threads (or awaited, for an `async def`), the request's deadline
honoured (items not done by then come back TIMEOUT), and exceptions or NaN/inf scores
turned into ERROR results naming the item. `start(fn, port=0)` is the async form (tests).
Check a server with `meshrl reward check HOST:PORT`; semantics: docs/reward-services.md.
"""

from meshrl.reward_sdk.item import Item
from meshrl.reward_sdk.serve import serve, start
from meshrl.reward_sdk.servicer import FunctionServicer

__all__ = ["FunctionServicer", "Item", "serve", "start"]
