"""Where a run's services can be reached: one run-KV entry per replica that serves gRPC.

    services.<kind>.<replica>  →  {"grpc": "127.0.0.1:PORT", "replica": ..., "pid": ..., "started_unix": ...}

A service puts its entry once its gRPC server is listening (`announce_service`) and deletes
it on a clean stop (`withdraw_service`); a client lists the live ones (`service_addresses`).
The rollout and reward services announce themselves this way; the learner's evaluation
and `meshrl eval` find them here. Lives in the core package so that no service imports
another to learn the key format.

Dots, not slashes, separate the parts: a KV key is one NATS subject token per dot, so the
server's permissions can let a kind write `services.<kind>.*` and nothing else (subjects.py).

A reader gets only well-formed entries (entries.py): one that is not JSON, or lacks a valid
`grpc` address or its key's `replica`, is skipped with a warning, never a KeyError.

Simplification: an entry of a replica that was killed (no clean stop) stays until the run
ends; a caller that cannot reach an address treats it as gone.
"""

from __future__ import annotations

import os
import time

from meshrl.transport.bus.entries import replica_entry
from meshrl.transport.bus.kv import RunState

PREFIX = "services"


def service_key(kind: str, replica: str) -> str:
    return f"{PREFIX}.{kind}.{replica}"


async def announce_service(state: RunState, kind: str, replica: str, address: str, **placement) -> None:
    """Put this replica's gRPC address under `services.<kind>.<replica>`, with where it runs
    (`placement`: a rollout's tensor-parallel workers and their cores) for `meshrl status`."""
    await state.put(
        service_key(kind, replica),
        {"grpc": address, "replica": replica, **placement, "pid": os.getpid(), "started_unix": time.time()},
    )


async def withdraw_service(state: RunState, kind: str, replica: str) -> None:
    await state.delete(service_key(kind, replica))


async def service_entries(state: RunState, kind: str) -> list[dict]:
    """Every live, well-formed entry of `kind`, sorted by replica id ([] when none is announced)."""
    # entries(), not keys(): listing keys needs a consumer, which only the learner may create,
    # and the rollout lists the environment's replicas (subjects.py)
    found = [replica_entry(e, kind) for e in await state.entries(f"{PREFIX}.{kind}") if e.value]
    return [entry for entry in found if entry is not None]


async def service_addresses(state: RunState, kind: str) -> list[str]:
    """The gRPC addresses of every announced replica of `kind`, sorted by replica id."""
    return [entry["grpc"] for entry in await service_entries(state, kind)]
