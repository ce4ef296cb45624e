"""The ledger proof on hand-made ledgers: a sound run passes; a double-trained group, a lost
one, a group outside the staleness bound and a draw trained twice without a resume are caught;
a learner resume's re-trained steps count as steps lost, not as double training.

Run: .venv/bin/python -m pytest -q tests/chaos/test_ledger_proof.py
"""

from tests.chaos.ledger_proof import prove_ledger, versions_at_step


def published(group_id, draw, min_version=0):
    return {"event": "published", "group_id": group_id, "min_version": min_version, "draw": draw}


def trained(group_id, step, version=None):
    return {
        "event": "trained",
        "group_id": group_id,
        "step": step,
        "policy_version": step if version is None else version,
    }


def dropped(group_id, reason="stale"):
    return {"event": "dropped", "group_id": group_id, "reason": reason, "policy_version": 0}


VERSIONS = {0: 0, 1: 1, 2: 2}  # on-policy: the learner holds version N while it gathers step N


def sound_ledger():
    return [
        published("a", 0),
        published("b", 1),
        trained("a", 0),
        trained("b", 0),
        published("c", 2, min_version=1),
        published("d", 3, min_version=1),
        dropped("c", "failed_reward"),
        published("e", 4, min_version=1),
        trained("d", 1),
        trained("e", 1),
    ]


def test_a_sound_ledger_has_no_problem_and_counts_what_happened():
    report = prove_ledger(sound_ledger(), VERSIONS)
    assert report.problems == []
    assert (report.published, report.trained, dict(report.dropped)) == (5, 4, {"failed_reward": 1})
    assert report.steps_lost == []


def test_a_group_trained_twice_is_caught():
    report = prove_ledger([*sound_ledger(), trained("d", 2, version=1)], VERSIONS)
    assert "d trained 2 times" in report.problems


def test_a_lost_group_is_caught():
    report = prove_ledger([*sound_ledger(), published("f", 5, min_version=2)], VERSIONS)
    assert report.problems == ["lost: f was published, never trained nor dropped"]


def test_a_group_outside_the_staleness_bound_is_caught():
    ledger = [
        published("a", 0, min_version=1),
        trained("a", 1, version=0),
        published("b", 1),
        trained("b", 1, version=2),
    ]
    assert prove_ledger(ledger, VERSIONS).problems == [
        "a trained at step 1 with policy version 0 outside [1, 1]",
        "b trained at step 1 with policy version 2 outside [0, 1]",
    ]


def test_a_draw_trained_again_without_a_resume_is_caught():
    ledger = [*sound_ledger(), published("a2", 0, min_version=2), trained("a2", 2)]
    assert prove_ledger(ledger, VERSIONS).problems == ["draw 0 trained 2 times: a@step0, a2@step2"]


def test_steps_redone_after_a_resume_are_steps_lost_not_double_training():
    # Trained steps 0 and 1, died, resumed from the checkpoint of step 1: step 1's draws
    # go out again under new ids, and the dead learner's late group is dropped.
    ledger = [
        *sound_ledger(),
        published("late", 5, min_version=2),
        {"event": "resumed", "step": 1, "policy_version": 1},
        published("d2", 3, min_version=1),
        published("e2", 4, min_version=1),
        dropped("late", "future_version"),
        trained("d2", 1),
        trained("e2", 1),
    ]
    report = prove_ledger(ledger, VERSIONS)
    assert report.problems == []
    assert report.steps_lost == [1]


def test_the_learner_version_of_a_step_is_the_one_before_its_push():
    metrics = [{"step": 0, "weights_version": 1}, {"step": 1, "weights_version": 1}, {"step": 2, "weights_version": 2}]
    assert versions_at_step(metrics, push_every=1) == {0: 0, 1: 0, 2: 1}
    assert versions_at_step(metrics, push_every=2) == {0: 1, 1: 0, 2: 2}
