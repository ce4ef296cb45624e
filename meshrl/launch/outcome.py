"""Did a run that ended fail? A learner that stops early (every group dropped, an alert's stop)
still exits 0 — it checkpointed on purpose — so the launcher would print "done" and exit 0
while nothing was trained; CI would count it green. Here the launcher reads the run dir:

    why = stop_reason(RunDir(run_dir), steps_done=2, total=3, since=started)   # "" = finished

An operator's stop (`meshrl control stop`, in audit.jsonl) is no failure: someone asked for it.
"""

from __future__ import annotations

from meshrl.run.records import read_rows
from meshrl.run_layout import RunDir

UNKNOWN = "the learner stopped before the last step without an alert; its reason is at the end of logs/learner-0.log"


def stop_reason(run: RunDir, *, steps_done: int, total: int, since: float) -> str:
    """Why the run stopped short ("" when it trained every step or an operator stopped it):
    the newest alert raised since `since` (alerts.jsonl), which names the fix."""
    if run.final.is_dir() or steps_done >= total:
        return ""
    if any(a.get("action") == "stop" for a in read_rows(run.audit) if _time(a) >= since):
        return ""
    alerts = [a for a in read_rows(run.alerts) if _time(a) >= since and a.get("message")]
    critical = [a for a in alerts if a.get("severity") == "critical"] or alerts
    return str(critical[-1]["message"]) if critical else UNKNOWN


def _time(row: dict) -> float:
    """A row's `time` (alerts and audit rows both keep one); a row without it counts as this run's."""
    value = row.get("time")
    return float(value) if isinstance(value, (int, float)) else float("inf")
