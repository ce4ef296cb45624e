"""The run's group ledger: every group id the learner published, trained on or dropped.

`RUN_DIR/groups.jsonl`, one line per event, so anyone can count ids end to end (nothing
lost, nothing trained twice) and see which policy version and replica made each trained
group. Also records the rollout replicas' "loaded version N" acknowledgements.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path


class Ledger:
    def __init__(self, path: str | Path | None):
        self._file = None if path is None else Path(path).open("a", buffering=1)

    def _write(self, event: str, **fields) -> None:
        if self._file is not None:
            self._file.write(json.dumps({"event": event, "time": time.time(), **fields}) + "\n")

    def published(self, group_id: str, min_version: int, draw: int | None = None) -> None:
        self._write("published", group_id=group_id, min_version=min_version, draw=draw)

    def dropped(self, group_id: str, reason: str, policy_version: int, detail: str = "") -> None:
        """`reason` a short code (also a metric label); `detail` what exactly, when known (a
        malformed group's problem, the rollout's whole `drop_reason`)."""
        extra = {"detail": detail} if detail else {}
        self._write("dropped", group_id=group_id, reason=reason, policy_version=policy_version, **extra)

    def trained(self, group, step: int) -> None:
        """`reward`: the group's mean sample reward, for `meshrl trace RUN_DIR`'s list of groups."""
        rewards = [s.reward for s in getattr(group, "samples", ()) if math.isfinite(s.reward)]
        self._write(
            "trained",
            group_id=group.group_id,
            step=step,
            policy_version=group.policy_version,
            replica=group.rollout_replica,
            reward=sum(rewards) / len(rewards) if rewards else None,
        )

    def resumed(self, step: int, policy_version: int) -> None:
        """A learner restarted from its checkpoint of `step`: steps from there on are trained
        again, and what the dead learner trained at those steps is superseded (steps lost)."""
        self._write("resumed", step=step, policy_version=policy_version)

    def weights_loaded(self, ack) -> None:
        self._write(
            "weights_loaded", replica=ack.replica_id, version=ack.version, ok=ack.ok, error=ack.error, load_s=ack.load_s
        )

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def read_ledger(path: str | Path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def unsettled_groups(events: list[dict]) -> list[tuple[str, int]]:
    """(group id, min version) of every group published and neither trained nor dropped."""
    settled = {e["group_id"] for e in events if e["event"] in ("trained", "dropped")}
    return [
        (e["group_id"], e.get("min_version", 0))
        for e in events
        if e["event"] == "published" and e["group_id"] not in settled
    ]
