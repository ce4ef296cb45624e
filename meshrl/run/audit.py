"""The run's audit: `RUN_DIR/audit.jsonl`, one JSON line per action that changes a run, and
the same row on the run's events subject (`meshrl.<run>.events`, header `Meshrl-Event: audit`).

    record_action(run_dir, "scale", run_id=..., changes={"rollout": {"from": 1, "to": 3}})
    →  {"time": 1767.., "when": "2026-..Z", "who": "alice", "action": "scale", "run_id": ..., ...}
    await record_and_announce(run_dir, info, "pause", who="olga", ...)  # the gateway, `meshrl scale`:
                                                 # the file first, then NATS as the run's admin (info: live)
    audit_local_action(run_dir, "rollback", to_step=3)     # the CLI's rollback / export (who = $USER)
    control_auditor(run_dir, js, run_id)         # the learner control service's direct calls
    await audit_alert_actions(run_dir, js, run_id, "pause", alerts, step=3)  # the learner's alert actions

`who` is $USER (the OS account when unset): on one machine that is who typed the command;
the gateway's tokens name the caller in a cluster. A row is appended with one write, so
concurrent writers never interleave within a line.

The file is the record of truth and the only one for a run that is not live (rollback and
export of a stopped run); a live run's subscribers (dashboards, an operator's `nats sub`) see
each action as it happens. A publish that fails (NATS down) is logged and never fails the
action. A process on this host joins a launcher's NATS as the run's admin with the files in
RUN_DIR/secrets (meshrl.run.secrets.admin_connect_args; embedded NATS only).
"""

from __future__ import annotations

import asyncio
import getpass
import json
import logging
import os
import time
from pathlib import Path

from meshrl import run_layout as layout
from meshrl.errors import LaunchError
from meshrl.run.presence import LauncherInfo, find_launcher
from meshrl.run.secrets import admin_connect_args
from meshrl.transport.bus import Bus
from meshrl.transport.bus.publish import publish_with_retry
from meshrl.transport.bus.subjects import events_subject

log = logging.getLogger("meshrl.audit")
EVENT_HEADER = {"Meshrl-Event": "audit"}
# gRPC metadata naming whom a control call is made for (the gateway: its token's holder). The
# learner records it in its own row as the caller's claim; it never skips the row (a
# caller-supplied header that skipped it would let any caller act unaudited).
ON_BEHALF_OF = "meshrl-on-behalf-of"
AUDIT_FILE = layout.AUDIT


def current_user() -> str:
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return f"uid:{os.getuid()}"


def record_action(run_dir: Path, action: str, **what) -> dict:
    """Append one row (who, when, action, what) and return it."""
    now = time.time()
    row = {
        "time": now,
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "who": current_user(),
        "action": action,
        **what,
    }
    with (Path(run_dir) / AUDIT_FILE).open("a") as log:
        log.write(json.dumps(row) + "\n")
    return row


async def publish_action(js, run_id: str, row: dict) -> None:
    await publish_with_retry(js, events_subject(run_id), json.dumps(row).encode(), headers=EVENT_HEADER, attempts=2)


async def announce_action(run_dir: Path, info: LauncherInfo, row: dict, timeout_s: float = 5.0) -> bool:
    """Publish `row` on the live run's events subject; False (logged) when NATS cannot take it."""
    try:
        async with await Bus.connect(
            info.nats_url, info.run_id, name="meshrl-audit", timeout=timeout_s, **admin_connect_args(run_dir)
        ) as bus:
            await publish_action(bus.js, info.run_id, row)
    except Exception as err:  # noqa: BLE001 - the action happened and audit.jsonl has it
        log.warning(
            "%s by %s is in %s/audit.jsonl but not on the run's events subject: %s",
            row.get("action"),
            row.get("who"),
            run_dir,
            err,
        )
        return False
    return True


async def audit_alert_actions(run_dir, js, run_id: str, action: str, alerts, **what) -> None:
    """One row per alert whose rule took `action` (pause / stop): who = "alert:<rule>"; in
    audit.jsonl, then on the events subject over the caller's bus (the learner's)."""
    for alert in alerts:
        row = record_action(
            Path(run_dir), action, who=f"alert:{alert.rule}", via="alerts", run_id=run_id, reason=alert.message, **what
        )
        await publish_quietly(js, run_id, row)


async def publish_quietly(js, run_id: str, row: dict) -> None:
    """publish_action; a failure is logged, never raised: the action goes on, audit.jsonl has it."""
    try:
        await publish_action(js, run_id, row)
    except Exception as err:  # noqa: BLE001
        log.warning(
            "%s by %s is in audit.jsonl but not on the run's events subject: %s", row.get("action"), row.get("who"), err
        )


def control_auditor(run_dir, js, run_id: str):
    """The learner control service's `audit`: every pause / resume / checkpoint call, direct or
    the gateway's (which writes its own row too, with its token's name), in audit.jsonl, then
    on the subject."""

    async def audit(action: str, who: str, **what) -> None:
        row = record_action(Path(run_dir), action, who=who, via="learner-control", run_id=run_id, **what)
        await publish_quietly(js, run_id, row)

    return audit


async def record_and_announce(run_dir: Path, info: LauncherInfo | None, action: str, **what) -> dict:
    """The audit.jsonl row, then, when `info` names the live run's launcher, the same row on
    its events subject (the gateway's actions, `meshrl scale`, the CLI's rollback / export)."""
    row = record_action(Path(run_dir), action, **what)
    if info is not None:
        await announce_action(Path(run_dir), info, row)
    return row


def audit_local_action(run_dir: Path, action: str, **what) -> dict:
    """A CLI verb on this machine (rollback, export): who = $USER, announced if the run is live."""
    try:
        info = find_launcher(Path(run_dir))
    except LaunchError:
        info = None  # not live: the file is the whole record
    return asyncio.run(record_and_announce(run_dir, info, action, via="cli", **what))


__all__ = [
    "ON_BEHALF_OF",
    "AUDIT_FILE",
    "EVENT_HEADER",
    "announce_action",
    "audit_alert_actions",
    "audit_local_action",
    "control_auditor",
    "current_user",
    "publish_action",
    "publish_quietly",
    "record_action",
    "record_and_announce",
]
