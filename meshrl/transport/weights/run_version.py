"""The run's current weights version: kept by the learner in the run KV, checked by the replicas.

The learner announces each version with two puts, in this order (`announce`):

    RUN_VERSION_KEY     {"version": V, "step": S}     the run state: which version is current
    WEIGHTS_NOTICE_KEY  WeightsNotice(version=V)      where its weights are

so a replica that sees notice V finds the run at V, or already past it. A replica loads a
notice only when its version equals the run's (`refusal` is None):
- a learner resuming from an older checkpoint sets the run's version back before its
  notice: the lower version is accepted;
- a stale notice replayed (a version the run has left) or a forged one skipping ahead is
  refused, and the refusal names both versions.
A run state with no version (a learner from before this key) accepts every notice, as before.
The learner alone may write either key (meshrl.transport.bus.subjects).
"""

from __future__ import annotations

from meshrl.api.common.v1 import common_pb2 as pb
from meshrl.transport.bus.entries import run_version_of
from meshrl.transport.bus.subjects import RUN_VERSION_KEY, WEIGHTS_NOTICE_KEY


async def announce(state, notice: pb.WeightsNotice) -> None:
    """Put the run's version, then the notice (never the other way: see the module's doc)."""
    await state.put(RUN_VERSION_KEY, {"version": notice.version, "step": notice.step})
    await state.put(WEIGHTS_NOTICE_KEY, notice)


async def run_version(state) -> int | None:
    """The run's current weights version, or None when the learner keeps none or the key holds
    something else (a JetStream API answer someone aimed at it: skipped with a warning by
    entries.py, and notices, which the learner signs, are then judged alone)."""
    entry = await state.get(RUN_VERSION_KEY)
    return None if entry is None else run_version_of(entry)


def refusal(notice_version: int, current: int | None) -> str | None:
    """Why a notice for `notice_version` must not be loaded while the run is at `current`."""
    if current is None or notice_version == current:
        return None
    how = "goes back from" if notice_version < current else "skips ahead of"
    return (
        f"weights v{notice_version} {how} the run's current version v{current} "
        f"(run KV key {RUN_VERSION_KEY!r}, written by the learner before each notice): "
        f"a stale or forged notice, not loaded"
    )
