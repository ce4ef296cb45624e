"""Tags, pruning, listing and rollback: what stays, what goes, and the errors."""

import json

import pytest

from meshrl.inputs.checkpoint import (
    CheckpointError,
    latest_good_checkpoint,
    list_checkpoints,
    prune,
    rollback,
    tag,
    untag,
)


def _steps(run):
    return [r.step for r in list_checkpoints(run)]


def test_prune_keeps_last_k_plus_tagged(save_run):
    run = save_run([1, 2, 3, 4, 5])
    tag(run, 1, "best")
    removed = prune(run, keep_last=2)
    assert sorted(p.name for p in removed) == ["step_2", "step_3"]
    assert _steps(run) == [1, 4, 5]
    rows = {r.step: r for r in list_checkpoints(run)}
    assert rows[1].tags == ["best"] and rows[4].tags == [] and rows[5].status == "ok"
    assert not list((run / "checkpoints").glob("*.tmp-*"))  # deleted via rename, fully gone


def test_prune_never_deletes_corrupt_ones_and_counts_only_intact(save_run):
    run = save_run([1, 2, 3])
    (run / "checkpoints/step_3/state.json").write_text("{}")  # size changes: quick check sees it
    prune(run, keep_last=1)
    assert _steps(run) == [2, 3]  # 3 is corrupt (kept as evidence), 2 is the newest intact
    with pytest.raises(CheckpointError, match="keep at least 1"):
        prune(run, keep_last=0)


def test_prune_removes_partial_saves_of_dead_processes(save_run):
    run = save_run([1])
    dead = run / "checkpoints" / "step_2.tmp-999999999"
    dead.mkdir()
    (dead / "junk").write_bytes(b"x")
    assert prune(run, keep_last=3) == [dead] and not dead.exists()


def test_list_rows(save_run):
    run = save_run([3, 10])
    rows = list_checkpoints(run)
    assert [(r.step, r.status, r.tags) for r in rows] == [(3, "ok", []), (10, "ok", [])]
    assert rows[0].created.endswith("Z") and rows[0].size > 100_000
    assert rows[0].size == sum(p.stat().st_size for p in rows[0].path.rglob("*") if p.is_file())


def test_tag_errors_and_untag(save_run):
    run = save_run([1])
    with pytest.raises(CheckpointError, match=r"no checkpoint for step 7 .*available steps: \[1\]"):
        tag(run, 7, "best")
    with pytest.raises(CheckpointError, match="tag 'a b' is not allowed"):
        tag(run, 1, "a b")
    tag(run, 1, "best"), tag(run, 1, "release"), tag(run, 1, "best")
    assert list_checkpoints(run)[0].tags == ["best", "release"]
    untag(run, 1, "best")
    assert list_checkpoints(run)[0].tags == ["release"]
    with pytest.raises(CheckpointError, match="has no tag 'best'"):
        untag(run, 1, "best")


def test_rollback_moves_later_checkpoints_aside(save_run):
    run = save_run([1, 2, 3])
    (run / "checkpoints" / "step_4.tmp-123").mkdir()
    target = rollback(run, 1)
    assert target == run / "checkpoints" / "step_1"
    assert latest_good_checkpoint(run) == target and _steps(run) == [1]
    aside = list((run / "checkpoints" / "rolled_back").glob("*-to-step_1"))
    assert len(aside) == 1
    assert sorted(p.name for p in aside[0].iterdir()) == ["ROLLBACK.json", "step_2", "step_3", "step_4.tmp-123"]
    note = json.loads((aside[0] / "ROLLBACK.json").read_text())
    assert note["to_step"] == 1 and note["moved"] == ["step_2", "step_3", "step_4.tmp-123"]
    assert (aside[0] / "step_3" / "manifest.json").exists()  # moved whole, not deleted


def test_rollback_errors(save_run, tmp_path):
    run = save_run([1, 2])
    with pytest.raises(CheckpointError, match=r"no checkpoint for step 5 .*available steps: \[1, 2\]"):
        rollback(run, 5)
    with pytest.raises(CheckpointError, match="run dir .*missing does not exist"):
        rollback(tmp_path / "missing", 1)
    (run / "checkpoints/step_1/manifest.json").write_text("{}")
    with pytest.raises(CheckpointError, match="cannot roll back to step 1: .*tampered manifest"):
        rollback(run, 1)
    assert _steps(run) == [1, 2]  # nothing moved
