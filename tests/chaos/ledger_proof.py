"""The ledger proof: from RUN_DIR/groups.jsonl, show that a run lost nothing and trained
nothing twice, whatever died on the way.

    report = prove_ledger(read_ledger(run_dir / "groups.jsonl"), versions_at_step(metrics))
    assert not report.problems, report.problems

Checked, for every group id the learner published:
- it was trained or dropped with a reason (else: lost), never both, never trained twice;
- a trained group's policy version is inside the staleness bound: the min version of its
  task <= its version <= the learner's version when it gathered that step;
- no draw (the run's n-th prompt) counts twice among the steps that survived: a learner
  resumed from a checkpoint trains the steps after it again, and those first trainings are
  "steps lost", not a group trained twice; any other repeat of a draw is.
Events about ids never published are problems too (a group from nowhere).

A learner's resume is the ledger's `resumed` event (services/learner/ledger.py).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field


@dataclass
class LedgerReport:
    published: int = 0
    trained: int = 0
    dropped: Counter = field(default_factory=Counter)  # reason -> groups
    steps_lost: list[int] = field(default_factory=list)  # trained, then trained again after a resume
    problems: list[str] = field(default_factory=list)


def versions_at_step(metrics: list[dict], push_every: int = 1) -> dict[int, int]:
    """The learner's policy version while it gathered each step: metrics log the version
    after the step's push, which a pushing step has just raised by one."""
    return {
        int(m["step"]): int(m["weights_version"]) - (1 if (int(m["step"]) + 1) % push_every == 0 else 0)
        for m in metrics
    }


def superseded_trainings(events: list[dict]) -> tuple[list[dict], list[int]]:
    """The trainings no resume redid, and the steps lost: a learner that resumes from its
    checkpoint of step S (a `resumed` event) trains steps S, S+1, ... again, so what the
    dead learner trained at those steps is superseded."""
    kept, lost = [], set()
    for e in events:
        if e["event"] == "resumed":
            lost |= {t["step"] for t in kept if t["step"] >= e["step"]}
            kept = [t for t in kept if t["step"] < e["step"]]
        elif e["event"] == "trained":
            kept.append(e)
    return kept, sorted(lost)


def prove_ledger(events: list[dict], version_at_step: dict[int, int]) -> LedgerReport:
    report = LedgerReport()
    published = {e["group_id"]: e for e in events if e["event"] == "published"}
    trained = [e for e in events if e["event"] == "trained"]
    dropped = [e for e in events if e["event"] == "dropped"]
    report.published, report.trained = len(published), len(trained)
    report.dropped.update(e["reason"] or "(no reason)" for e in dropped)
    report.problems += settled_once(published, trained, dropped)
    report.problems += within_staleness(published, trained, version_at_step)
    surviving, report.steps_lost = superseded_trainings(events)
    report.problems += draws_once(surviving, published)
    return report


def settled_once(published: dict[str, dict], trained: list[dict], dropped: list[dict]) -> list[str]:
    problems = []
    times_trained = Counter(e["group_id"] for e in trained)
    drop_ids = {e["group_id"] for e in dropped}
    for group_id in published:
        if times_trained[group_id] == 0 and group_id not in drop_ids:
            problems.append(f"lost: {group_id} was published, never trained nor dropped")
        if times_trained[group_id] and group_id in drop_ids:
            problems.append(f"{group_id} was both trained and dropped")
    problems += [f"{g} trained {n} times" for g, n in times_trained.items() if n > 1]
    problems += [
        f"{e['event']} {e['group_id']} was never published"
        for e in [*trained, *dropped]
        if e["group_id"] not in published
    ]
    problems += [f"{e['group_id']} dropped without a reason" for e in dropped if not e.get("reason")]
    return problems


def within_staleness(published: dict[str, dict], trained: list[dict], version_at_step: dict[int, int]) -> list[str]:
    problems = []
    for e in trained:
        task = published.get(e["group_id"])
        learner_version = version_at_step.get(e["step"])
        if task is None:
            continue  # already reported as never published
        if learner_version is None:
            problems.append(f"{e['group_id']} trained at step {e['step']}, which has no metrics row")
        elif not task["min_version"] <= e["policy_version"] <= learner_version:
            problems.append(
                f"{e['group_id']} trained at step {e['step']} with policy version "
                f"{e['policy_version']} outside [{task['min_version']}, {learner_version}]"
            )
    return problems


def draws_once(surviving: list[dict], published: dict[str, dict]) -> list[str]:
    by_draw = defaultdict(list)
    for e in surviving:
        draw = published.get(e["group_id"], {}).get("draw")
        if draw is not None:
            by_draw[draw].append(f"{e['group_id']}@step{e['step']}")
    return [
        f"draw {d} trained {len(ids)} times: {', '.join(ids)}" for d, ids in sorted(by_draw.items()) if len(ids) > 1
    ]
