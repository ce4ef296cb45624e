"""Rows for requests that must fail with the contract's status: an unknown episode, an empty
id, a turn out of order, bytes that are no message at all, and a call without the token."""

from __future__ import annotations

import grpc
from grpc import aio

from meshrl.api.env.v1 import env_pb2
from meshrl.cli.env_check.kit import Kit
from meshrl.cli.reward_check.table import FAIL, PASS, Row

STEP = "/meshrl.env.v1.EnvironmentService/Step"


def expect(name: str, answer, code: grpc.StatusCode, fix: str) -> Row:
    good = answer.code == code
    return Row(name, PASS if good else FAIL, answer.status(), "" if good else fix)


async def status_rows(kit: Kit) -> list[Row]:
    """The id rows, then a turn out of order on an episode opened for it (and closed after)."""
    fresh = kit.new_id()
    await kit.reset(fresh)
    rows = await id_rows(kit)
    rows.append(
        expect(
            "turn out of order → INVALID_ARGUMENT",
            await kit.step(fresh, 5),
            grpc.StatusCode.INVALID_ARGUMENT,
            "turns are 0, 1, 2, ... per episode: refuse a turn that is not the next (or a retry of one "
            "already answered) with INVALID_ARGUMENT",
        )
    )
    await kit.close(fresh)
    return rows


async def id_rows(kit: Kit) -> list[Row]:
    """An episode id the server does not hold, and none at all, on Step and on Reset."""
    return [
        expect(
            "unknown episode → NOT_FOUND",
            await kit.step(kit.new_id(), 0),
            grpc.StatusCode.NOT_FOUND,
            "answer Step on an episode id you do not hold with NOT_FOUND (meshrl drops the episode)",
        ),
        expect(
            "empty episode id → INVALID_ARGUMENT",
            await kit.call("Step", env_pb2.StepRequest(turn=0)),
            grpc.StatusCode.INVALID_ARGUMENT,
            "refuse a request without episode_id with INVALID_ARGUMENT",
        ),
        expect(
            "empty episode id on Reset → INVALID_ARGUMENT",
            await kit.reset(""),
            grpc.StatusCode.INVALID_ARGUMENT,
            "refuse a Reset without episode_id with INVALID_ARGUMENT",
        ),
    ]


async def garbage_row(channel: aio.Channel, kit: Kit) -> Row:
    raw = channel.unary_unary(STEP)  # bytes sent as they are: not a StepRequest
    try:
        await raw(
            b"\xff\xff\xff\xff meshrl env check: not a protobuf message", timeout=kit.timeout_s, metadata=kit.metadata
        )
    except aio.AioRpcError as err:
        return Row("garbage bytes → a status", PASS, f"{err.code().name}: {(err.details() or '')[:120]}")
    return Row(
        "garbage bytes → a status",
        FAIL,
        "bytes that are no StepRequest were answered OK",
        "let your gRPC library parse requests (generated stubs do) and refuse what does not parse",
    )


async def token_row(kit: Kit) -> Row | None:
    """With --token-file: a call without the token must be refused."""
    if not kit.metadata:
        return None
    episode_id = kit.new_id()
    answer = await kit.call("Reset", kit.reset_request(episode_id), metadata=())
    if answer.ok:
        await kit.close(episode_id)
    return expect(
        "no token → UNAUTHENTICATED",
        answer,
        grpc.StatusCode.UNAUTHENTICATED,
        "check 'authorization: Bearer <token>' on every call (health may stay open) and refuse a "
        "missing or wrong one with UNAUTHENTICATED",
    )
