"""The conformance suite: health, reflection, scenarios, then contract rows over every answer."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from google.protobuf.message import DecodeError
from grpc import aio

from meshrl.api.reward.v1 import reward_pb2
from meshrl.cli.reward_check import requests
from meshrl.cli.reward_check.probes import health_row, reflection_row
from meshrl.cli.reward_check.table import FAIL, PASS, Row
from meshrl.cli.reward_check.tls_probe import TlsProbe
from meshrl.cli.reward_check.validate import response_problems, status_counts

CONTRACT_ROWS = {  # row key → (check name, fix)
    "results": (
        "one result per item",
        "return exactly one ScoreResult per ScoreItem; an item you cannot "
        "score gets status ERROR (or TIMEOUT) with an error text, never no result",
    ),
    "ids": (
        "ids matched",
        "copy each ScoreItem.id into its ScoreResult.id, once; never invent or repeat ids "
        "(results may come in any order)",
    ),
    "statuses": (
        "statuses used correctly",
        "use SCORE_STATUS_OK / _ERROR / _TIMEOUT; an ERROR or TIMEOUT result must say why in `error`",
    ),
    "finite": (
        "no NaN/inf score with OK",
        "a NaN or infinite score must be reported as status ERROR "
        "with an error text (and details must be finite): it would poison training",
    ),
}


SCORE = "/meshrl.reward.v1.RewardService/Score"


def parse_score(data: bytes):
    """(response, "") or (None, what the bytes were): an answer that is no ScoreResponse is a
    FAIL row, not an exception inside gRPC's deserializer."""
    try:
        return reward_pb2.ScoreResponse.FromString(data), ""
    except DecodeError as err:
        return None, f"{len(data)} bytes that are no ScoreResponse ({err})"


@dataclass
class Suite:
    score: aio.UnaryUnaryMultiCallable
    component: str
    timeout_s: float
    metadata: tuple = ()
    problems: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in CONTRACT_ROWS})

    async def call(self, request: reward_pb2.ScoreRequest, timeout_s: float | None = None):
        """(response, None) or (None, 'CODE: details'); the answer's problems are recorded."""
        try:
            response, why = await self.score(request, timeout=timeout_s or self.timeout_s, metadata=self.metadata)
        except aio.AioRpcError as err:
            return None, f"{err.code().name}: {err.details()}"
        if response is None:
            return None, f"INVALID_ANSWER: answered {why}"
        for key, text in response_problems(request, response):
            self.problems[key].append(f"[{request.items[0].id.split('/')[0]}] {text}")
        return response, None

    async def scenario(self, name: str, request: reward_pb2.ScoreRequest) -> Row:
        t0 = time.monotonic()
        response, err = await self.call(request)
        took = time.monotonic() - t0
        if err:
            return Row(name, FAIL, f"Score failed after {took:.2f} s: {err}", fix_for(err, self.timeout_s))
        return Row(name, PASS, f"{len(request.items)} items in {took:.2f} s: {status_counts(response)}")


def fix_for(err: str, timeout_s: float) -> str:
    if err.startswith("DEADLINE_EXCEEDED"):
        return (
            f"answer within the deadline ({timeout_s:g} s here; raise it with --timeout if your service "
            f"is meant to be slower): score items concurrently, return TIMEOUT for those not done in time"
        )
    if err.startswith("UNAVAILABLE"):
        return "start the service, check ADDRESS and the TLS flags (--tls-ca for a TLS server)"
    if err.startswith("UNIMPLEMENTED"):
        return "register meshrl.reward.v1.RewardService (protos/meshrl/reward/v1/reward.proto) on this server"
    if err.startswith("INVALID_ANSWER"):
        return "answer with a serialized ScoreResponse (generated stubs do it); meshrl cannot read these bytes"
    if err.startswith("RESOURCE_EXHAUSTED"):
        return "accept messages of at least 64 MiB (grpc.max_receive_message_length)"
    return (
        "a per-item failure belongs in that item's result (status ERROR); fail the call only when no item can be scored"
    )


async def concurrent_row(suite: Suite, calls: int = 8, per_call: int = 25) -> Row:
    reqs = [
        requests.request(
            suite.component, [requests.item(f"conc{c}/{i}", f"The answer is {(c + i) % 10}") for i in range(per_call)]
        )
        for c in range(calls)
    ]
    t0 = time.monotonic()
    answers = await asyncio.gather(*(suite.call(r) for r in reqs))
    errors = [err for _, err in answers if err]
    name = f"concurrent calls ({calls} x {per_call} items)"
    if errors:
        return Row(
            name,
            FAIL,
            f"{len(errors)} of {calls} calls failed: {errors[0]}",
            "serve calls concurrently (grpc.aio, or a thread pool large enough); "
            + fix_for(errors[0], suite.timeout_s),
        )
    return Row(name, PASS, f"{calls} calls answered in {time.monotonic() - t0:.2f} s")


async def deadline_row(suite: Suite, health, deadline_s: float = 0.05) -> Row:
    """A 1,000-item call with a deadline too short for most services must end by it; then the
    service must still be healthy and answer. (The kit cannot make a service slow: this is what
    an expired deadline looks like from outside.)"""
    name = f"deadline honoured ({deadline_s * 1000:g} ms deadline)"
    t0 = time.monotonic()
    response, err = await suite.call(requests.large_batch(suite.component), timeout_s=deadline_s)
    took = time.monotonic() - t0
    if took > deadline_s + 1.0:
        return Row(
            name,
            FAIL,
            f"the call ended {took:.2f} s after a {deadline_s:g} s deadline",
            "honour the call's deadline (grpc-timeout): stop work and answer, or let the call expire",
        )
    ended = (
        f"answered in time ({status_counts(response)})" if response else f"ended by the deadline ({err.split(':')[0]})"
    )
    after, after_err = await suite.call(requests.basic(suite.component, tag="after-deadline"))
    if after_err or not await health():
        return Row(
            name,
            FAIL,
            f"{ended}, but afterwards: {after_err or 'health is no longer SERVING'}",
            "a cancelled or expired call must not break the service: cancel its work and keep serving",
        )
    return Row(name, PASS, f"{ended}; the service answered normally afterwards")


def contract_rows(suite: Suite) -> list[Row]:
    rows = []
    for key, (name, fix) in CONTRACT_ROWS.items():
        found = suite.problems[key]
        if found:
            more = f" (+{len(found) - 2} more)" if len(found) > 2 else ""
            rows.append(Row(name, FAIL, "; ".join(found[:2]) + more, fix))
        else:
            rows.append(Row(name, PASS, "in every answer received"))
    return rows


async def scenario_rows(suite: Suite, component: str) -> list[Row]:
    """The requests every reward service must score: a plain batch, a large one, large responses, odd strings."""
    rows = []
    for name, request in [
        ("basic batch", requests.basic(component)),
        ("1,000-item batch", requests.large_batch(component)),
        ("1 MiB responses", requests.megabyte(component)),
        ("unicode and empty strings", requests.unicode_and_empty(component)),
    ]:
        rows.append(await suite.scenario(name, request))
    return rows


async def run_suite(
    channel: aio.Channel,
    *,
    component: str = "",
    timeout_s: float = 30.0,
    metadata: tuple = (),
    probe: TlsProbe | None = None,
) -> list[Row]:
    """Every check, in order; never raises for a misbehaving service (its rows FAIL). With
    `probe`, a connection that fails (TLS, nothing listening) is one row naming why."""
    score = channel.unary_unary(
        SCORE, request_serializer=reward_pb2.ScoreRequest.SerializeToString, response_deserializer=parse_score
    )
    suite = Suite(score, component, timeout_s, tuple(metadata))
    health = await health_row(channel, metadata, probe=probe)
    if health.blocking:
        return [health]
    rows = [health, await reflection_row(channel, metadata), *await scenario_rows(suite, component)]
    rows.append(await concurrent_row(suite))

    async def serving() -> bool:  # a missing health service is the health row's failure only
        return health.outcome != PASS or (await health_row(channel, metadata)).outcome == PASS

    rows.append(await deadline_row(suite, serving))
    return rows + contract_rows(suite)
