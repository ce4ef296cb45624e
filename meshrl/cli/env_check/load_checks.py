"""Rows for deadlines and concurrency: a call whose deadline is too short ends by it and its
retry then works (idempotency after a deadline), and episodes run at once without failing."""

from __future__ import annotations

import asyncio
import time

from meshrl.cli.env_check.kit import Kit
from meshrl.cli.reward_check.table import FAIL, PASS, Row


async def deadline_row(kit: Kit, healthy, deadline_s: float = 0.001) -> Row:
    name = f"deadline honoured ({deadline_s * 1000:g} ms deadline)"
    episode_id = kit.new_id()
    t0 = time.monotonic()
    short = await kit.call("Reset", kit.reset_request(episode_id), timeout_s=deadline_s)
    took = time.monotonic() - t0
    if took > deadline_s + 1.0:
        return Row(
            name,
            FAIL,
            f"the call ended {took:.2f} s after a {deadline_s:g} s deadline",
            "honour the call's deadline (grpc-timeout): stop work and answer, or let the call expire",
        )
    retry = await kit.reset(episode_id)
    step = await kit.step(episode_id, 0) if retry.ok else retry
    await kit.close(episode_id)
    if not step.ok or not await healthy():
        return Row(
            name,
            FAIL,
            f"ended by the deadline ({short.status()[:40]}), but then: "
            f"{step.status() if not step.ok else 'health is no longer SERVING'}",
            "after an expired call the same Reset must still work (finish it, or forget it) and the "
            "service must keep serving",
        )
    return Row(name, PASS, f"ended by it ({short.status()[:40]}); the retried Reset and a Step then worked")


async def concurrent_row(kit: Kit, episodes: int = 8) -> Row:
    async def one() -> str:
        episode_id = kit.new_id()
        for answer in (await kit.reset(episode_id), await kit.step(episode_id, 0), await kit.close(episode_id)):
            if not answer.ok:
                return answer.status()
        return ""

    t0 = time.monotonic()
    failures = [f for f in await asyncio.gather(*(one() for _ in range(episodes))) if f]
    name = f"concurrent episodes ({episodes})"
    if failures:
        return Row(
            name,
            FAIL,
            f"{len(failures)} of {episodes} episodes failed: {failures[0]}",
            "serve episodes concurrently (grpc.aio, or a thread pool large enough) and keep each "
            "episode's state by its id; answer RESOURCE_EXHAUSTED only when really full",
        )
    return Row(name, PASS, f"reset, step and close of {episodes} episodes at once in {time.monotonic() - t0:.2f} s")
