"""Client for an external reward service (`kind: external`, `address: host:port`).

`RewardService.Score` calls of at most `batch_size` items, each with a deadline of the
component's `timeout_s`, retried / limited / cut off by a circuit breaker as calls.py says.
Results are matched to items by id, in any order. Mapping failures to statuses:

- deadline exceeded → TIMEOUT for every item; any other RPC error → ERROR with its code
  and details;
- an id the request did not contain (extra) → ERROR for every item, naming the extras
  (the service answered some other batch; no result can be trusted); a repeated id →
  ERROR for that item; an item with no result (missing) → ERROR for that item;
- a result with status ERROR/TIMEOUT → that status with the service's error text;
  status UNSPECIFIED with a finite score is taken as OK (a service that forgot the field);
- a non-finite score → ERROR.
"""

import asyncio
import json
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import grpc

from meshrl.api.reward.v1 import reward_pb2, reward_pb2_grpc
from meshrl.config import ConfigError
from meshrl.config.schema import RewardComponentConfig
from meshrl.services.reward.calls import ExternalCalls
from meshrl.services.reward.types import ItemScore, RewardItem, Status, failed
from meshrl.transport.rpc.breaker import BreakerOpen

PASSED_THROUGH = {2: Status.ERROR, 3: Status.TIMEOUT}  # ScoreStatus ERROR / TIMEOUT


def to_score_item(it: RewardItem) -> reward_pb2.ScoreItem:
    """The mesh's item in the standalone contract's terms (docs/reward-services.md); an
    episode goes whole: `response` the rendered episode, `episode` its turns."""
    # An item made without the row's JSON (a test, an older task) still sends valid JSON.
    truth = it.ground_truth_json or (json.dumps(it.ground_truth) if it.ground_truth else "")
    return reward_pb2.ScoreItem(
        id=it.id,
        prompt=it.prompt,
        response=it.episode_text or it.response,
        ground_truth_json=truth,
        data_source=it.data_source,
        extra_json=it.extra_json or "{}",
        prompt_messages=[reward_pb2.ChatMessage(role=r, content=c) for r, c in it.prompt_messages],
        response_tokens=it.num_tokens,
        finish_reason=it.finish_reason,
        truncated=it.truncated,
        episode=[reward_pb2.ChatMessage(role=r, content=c) for r, c in it.episode],
    )


def from_result(r: reward_pb2.ScoreResult, who: str) -> ItemScore:
    if r.status in PASSED_THROUGH:
        return failed(PASSED_THROUGH[r.status], f"{who}: {r.error or 'no error text'}")
    if not math.isfinite(r.score):
        return failed(Status.ERROR, f"{who} returned a non-finite score {r.score!r} for id {r.id!r}")
    return ItemScore(value=r.score, details=dict(r.details))


def match_results(items: list[RewardItem], results, who: str) -> list[ItemScore]:
    wanted = {it.id for it in items}
    counts = Counter(r.id for r in results)
    extra = sorted(counts.keys() - wanted)
    if extra:
        return [failed(Status.ERROR, f"{who} returned results for unknown ids {extra[:5]}")] * len(items)
    by_id = {r.id: r for r in results}

    def one(it: RewardItem) -> ItemScore:
        if counts[it.id] == 0:
            return failed(Status.ERROR, f"{who} returned no result for id {it.id!r}")
        if counts[it.id] > 1:
            return failed(Status.ERROR, f"{who} returned {counts[it.id]} results for id {it.id!r}")
        return from_result(by_id[it.id], who)

    return [one(it) for it in items]


def rpc_failure(err: grpc.aio.AioRpcError, who: str, timeout_s: float) -> ItemScore:
    if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return failed(Status.TIMEOUT, f"{who} did not answer within timeout_s={timeout_s:g}s")
    return failed(Status.ERROR, f"{who} failed: {err.code().name}: {err.details()}")


@dataclass
class ExternalComponent:
    """Maps items to Score calls; `calls` (calls.py) decides how they are made: batching,
    concurrency, retries, circuit breaker, cache, TLS and token, metrics."""

    name: str
    weight: float
    address: str
    timeout_s: float
    run_id: str = ""
    cfg: RewardComponentConfig | None = field(default=None, repr=False)  # None: defaults
    calls: ExternalCalls = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.cfg is None:
            self.cfg = RewardComponentConfig(
                name=self.name, kind="external", weight=self.weight, address=self.address, timeout_s=self.timeout_s
            )
        self.calls = ExternalCalls(self.cfg, self.who)

    @classmethod
    def from_config(cls, cfg: RewardComponentConfig, run_id: str = "") -> "ExternalComponent":
        if not cfg.address:
            raise ConfigError(f"reward.components[{cfg.name}]: kind 'external' needs address: host:port")
        if cfg.params:
            raise ConfigError(
                f"reward.components[{cfg.name}]: kind 'external' takes no params (got {sorted(cfg.params)})"
            )
        return cls(cfg.name, cfg.weight, cfg.address, cfg.timeout_s, run_id, cfg)

    @property
    def who(self) -> str:
        return f"external reward {self.name!r} at {self.address}"

    async def score(self, items: list[RewardItem]) -> list[ItemScore]:
        return await self.calls.score(items, self.score_batch) if items else []

    async def score_batch(self, items: list[RewardItem]) -> list[ItemScore]:
        """One Score call for `items` (retried, behind the breaker: calls.py)."""
        request = reward_pb2.ScoreRequest(
            run_id=self.run_id, component=self.name, items=[to_score_item(it) for it in items]
        )
        try:
            response = await self.calls.call(
                lambda channel, timeout: reward_pb2_grpc.RewardServiceStub(channel).Score(request, timeout=timeout)
            )
        except grpc.aio.AioRpcError as err:
            return [rpc_failure(err, self.who, self.timeout_s)] * len(items)
        except (BreakerOpen, ConfigError) as err:  # ConfigError: a TLS / token file gone since start-up
            return [failed(Status.ERROR, f"{self.who}: {err}" if isinstance(err, ConfigError) else str(err))] * len(
                items
            )
        return match_results(items, response.results, self.who)

    async def close(self) -> None:
        await self.calls.close()


async def check_reachable(component: ExternalComponent, within_s: float = 5.0) -> None:
    """Raise ConnectionError naming the component and address unless its health is SERVING
    (asked over the component's own channel: TLS and token included)."""
    deadline, last = time.monotonic() + within_s, "no answer"
    while (left := deadline - time.monotonic()) > 0:
        last = await component.calls.health(timeout=min(left, 1.0))
        if last == "SERVING":
            return
        await asyncio.sleep(min(0.1, max(deadline - time.monotonic(), 0)))
    raise ConnectionError(
        f"reward component {component.name!r}: external reward service at {component.address} is not "
        f"reachable within {within_s:g}s (last health answer: {last}). Start it, or fix "
        f"reward.components[{component.name}].address (or its tls / token settings) in the run config."
    )
