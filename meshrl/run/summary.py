"""A run that no launcher is running any more, summed up from its run dir alone.

    summary = run_summary("runs/x")    # a dict, what `meshrl status RUN_DIR --json` prints
    print(describe_summary(summary))   # what `meshrl status RUN_DIR` prints

Read from the files the run left (meshrl.run_layout): config.yaml (the steps asked for),
metrics.jsonl (steps trained, the last step's reward and policy version, the held-out
`eval/*` metrics at start, logged as `eval_start/*` on the first step, and the last ones),
groups.jsonl (groups published, trained and dropped by reason), checkpoints/ and final/
(where the weights are), audit.jsonl (who stopped it), the learner's log (the last
warning or error, when it ended early) and trackers/ (an MLflow run a killed learner left
RUNNING, or rows the server did not take, with the command that sends and ends it). Missing or cut files give what can be read: a
summary is for reading after the fact, never refused.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from pathlib import Path

import yaml

from meshrl.inputs.checkpoint.layout import step_dirs
from meshrl.run.records import read_rows
from meshrl.run_layout import LAUNCH_LOCK, RunDir

LOG_PROBLEM = re.compile(r" (WARNING|ERROR|CRITICAL) ")
LEARNER_LOG = "learner-0"
# a learner touches its heartbeat every 20 s (services/learner/heartbeat.py); a run dir written
# this recently, with no local launcher, is a run that compose or Kubernetes is running (their
# learner shares the run dir)
LIVE_WITHIN_S = 300.0
PROBLEM_CHARS = 2000  # a log line longer than this is shown cut in the middle (a traceback packed in one line)


def total_steps(run: RunDir) -> int | None:
    """learner.steps of the run's resolved config; None when it cannot be read."""
    try:
        config = yaml.safe_load(run.config.read_text())
        return int(config["learner"]["steps"])
    except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError):
        return None


def held_out(rows: list[dict]) -> dict:
    """The `eval/*` metrics before training (`eval_start/*` of the first step) and the last ones logged."""
    before = next(
        (
            {k.replace("eval_start/", "eval/"): v for k, v in r.items() if k.startswith("eval_start/")}
            for r in rows
            if any(k.startswith("eval_start/") for k in r)
        ),
        {},
    )
    last = next((r for r in reversed(rows) if any(k.startswith("eval/") for k in r)), None)
    after = {k: v for k, v in (last or {}).items() if k.startswith("eval/")}
    return {"before": before, "after": after, "after_step": None if last is None else last.get("step")}


def checkpoints(run: RunDir) -> list[str]:
    """The finished checkpoint dirs, oldest step first."""
    return [str(path) for _, path in step_dirs(run.path)]


def ledger_counts(run: RunDir) -> dict:
    """Groups published, trained and dropped (by reason) according to the ledger."""
    events = read_rows(run.ledger)
    kinds = Counter(e.get("event") for e in events)
    dropped = Counter(str(e.get("reason", "?")) for e in events if e.get("event") == "dropped")
    return {
        "published": kinds["published"],
        "trained": kinds["trained"],
        "dropped": kinds["dropped"],
        "dropped_by_reason": dict(dropped.most_common()),
    }


def middle_cut(text: str, limit: int = PROBLEM_CHARS) -> str:
    """`text`, or its head and tail at word boundaries around " … ": an error's fix is said at
    its end ("... INVALID_ARGUMENT: set X"), so a cut keeps the end and never splits a word."""
    if len(text) <= limit:
        return text
    half = limit // 2
    head, tail = text[:half], text[-half:]
    if text[half] != " " and " " in head:
        head = head.rsplit(" ", 1)[0]
    if text[-half - 1] != " " and " " in tail:
        tail = tail.split(" ", 1)[1]
    return f"{head.rstrip()} … {tail.lstrip()}"


def last_problem(run: RunDir) -> str | None:
    """The learner log's last warning or error line, if any (whole, unless very long)."""
    try:
        lines = run.log(LEARNER_LOG).read_text(errors="replace").splitlines()
    except OSError:
        return None
    return next((middle_cut(line.strip()) for line in reversed(lines) if LOG_PROBLEM.search(line)), None)


def seconds_since_written(run: RunDir) -> float | None:
    """Seconds since the learner last touched its heartbeat or wrote metrics.jsonl or its log;
    None when none is there. The heartbeat counts because the other two may say nothing for a
    whole step (metrics at a step's end; under compose the log goes to stdout)."""
    paths = (run.heartbeat, run.metrics, run.log(LEARNER_LOG))
    times = [p.stat().st_mtime for p in paths if p.is_file()]
    return time.time() - max(times) if times else None


def launched_here(run: RunDir) -> bool:
    """A launcher on this machine ran it: its lock file stays, and its card while it runs."""
    return (run.path / LAUNCH_LOCK).exists() or run.presence.is_file()


def running_elsewhere(run: RunDir) -> str | None:
    """The line for a run no local launcher runs but whose learner is alive now (compose,
    Kubernetes): its live state is theirs to tell; None when the run dir is quiet, holds the
    final model, or a launcher on this machine ran it (a local run that just ended)."""
    age = seconds_since_written(run)
    if launched_here(run) or run.final.is_dir() or age is None or age > LIVE_WITHIN_S:
        return None
    return (
        f"running, not by a launcher on this machine (its learner wrote {age:.0f} s ago: compose or Kubernetes?); "
        "what its run dir says so far is below; its services: "
        "`podman-compose -f deploy/compose/compose.yaml ps` or `kubectl get pods`"
    )


def how_it_ended(run: RunDir, trained: int, total: int | None) -> str:
    """One line: finished, running elsewhere, stopped by whom, or where it failed, and what to do next."""
    # final/ is written only once the last step is trained; a compose or Kubernetes run dir may
    # hold no config.yaml to read the total from (its config lives with the containers)
    if run.final.is_dir() and (total is None or trained >= total):
        return "finished: every step trained, final model saved"
    stops = [a for a in read_rows(run.audit) if a.get("action") == "stop"]
    if not stops and (live := running_elsewhere(run)):
        return live
    if stops:
        s = stops[-1]
        ended = f"stopped by {s.get('who', '?')} via {s.get('via', '?')} at {s.get('when', '?')} after {trained} steps"
    elif run.presence.is_file():  # the launcher's card outlives it only when it was killed
        ended = f"its launcher died (killed?) after {trained} steps"
    elif not launched_here(run):
        return gone_quiet(run, trained)
    else:
        problem = last_problem(run)
        where = "before its first step" if trained == 0 else f"after {trained} steps"
        ended = f"ended {where} without finishing" + (f"; the learner's last word: {problem}" if problem else "")
    return ended + next_move(run)


def gone_quiet(run: RunDir, trained: int) -> str:
    """A run no launcher here ran, quiet and unfinished: its learner may be dead, or alive where
    this machine cannot see (a stuck step, a run dir not shared): a resume is offered only once
    its services are checked, since a second learner on a live run dir corrupts it."""
    age = seconds_since_written(run)
    quiet = "wrote nothing to the run dir" if age is None else f"has not written to the run dir for {age:.0f} s"
    problem = last_problem(run)
    return (
        f"not finished, no launcher on this machine ran it, and its learner {quiet} ({trained} steps trained)"
        + (f"; the learner's last word: {problem}" if problem else "")
        + "; check that nothing still runs it (`podman-compose -f deploy/compose/compose.yaml ps` or "
        "`kubectl get pods`) before resuming" + next_move(run)
    )


def next_move(run: RunDir) -> str:
    """How to go on: from the newest checkpoint, or from step 0 where none was saved."""
    if checkpoints(run):
        return f"; continue with `meshrl train --resume {run.path}`"
    return f"; there is no checkpoint: `meshrl train --resume {run.path}` starts it again at step 0"


def mlflow_state(run: RunDir, finished: bool) -> dict | None:
    """The run's MLflow run as its learners left it (no call to MLflow); None without one.
    `ended` None: no learner ended it (killed outright), so MLflow shows it RUNNING; `flush`:
    the command that sends what MLflow lacks and ends it, None when nothing is left to do."""
    try:
        saved = json.loads(run.mlflow_run.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or not isinstance(saved.get("run_id"), str):
        return None
    unsent, ended = len(read_rows(run.mlflow_unsent)), saved.get("ended", "unknown")
    flush = None
    if ended is None:
        flush = f"meshrl trackers flush {run.path} --end {'finished' if finished else 'killed'}"
    elif unsent:
        flush = f"meshrl trackers flush {run.path}"
    return {"run_id": saved["run_id"], "ended": ended, "unsent_rows": unsent, "flush": flush}


def run_summary(run_dir: str | Path) -> dict:
    """The summary of the run in `run_dir` (see the module docstring)."""
    run = RunDir(run_dir)
    rows = [r for r in read_rows(run.metrics) if isinstance(r.get("step"), int)]
    last = rows[-1] if rows else {}
    trained = last["step"] + 1 if rows else 0
    total = total_steps(run)
    version = last.get("weights_version")
    return {
        "run_dir": str(run.path),
        "steps_trained": trained,
        "total_steps": total,
        "final_reward": last.get("reward"),
        "policy_version": int(version) if isinstance(version, (int, float)) else None,
        "held_out": held_out(rows),
        "final_model": str(run.final) if run.final.is_dir() else None,
        "checkpoints": checkpoints(run),
        "groups": ledger_counts(run),
        "ended": how_it_ended(run, trained, total),
        "mlflow": mlflow_state(run, finished=run.final.is_dir()),
    }
