"""`meshrl eval` argument handling: every user error exits 2 with one message naming the
path, step, line or key, before any process starts (no vLLM here; the full run is in
tests/services/eval/test_eval_cli.py)."""

import json

import pytest

from meshrl.cli.main import main


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "eval.jsonl"
    rows = [{"prompt": "1+1?", "reward_model": {"ground_truth": "2"}}, {"prompt": "2+2?", "reward_model": {}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:1]))
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, bad


def run(capsys, *argv) -> tuple[int, str]:
    rc = main(["eval", *map(str, argv)])
    return rc, capsys.readouterr().err


def test_missing_source(capsys, tmp_path, data):
    rc, err = run(capsys, tmp_path / "nope", data[0])
    assert rc == 2 and f"{tmp_path / 'nope'} does not exist; pass RUN_DIR, RUN_DIR/checkpoints/step_N" in err


def test_unknown_step_lists_the_steps_there(capsys, tmp_path, data):
    (tmp_path / "run" / "checkpoints" / "step_3").mkdir(parents=True)
    rc, err = run(capsys, tmp_path / "run" / "checkpoints" / "step_9", data[0])
    assert rc == 2 and "no checkpoint for step 9" in err and "available steps: [3]" in err


def test_run_dir_without_checkpoints(capsys, tmp_path, data):
    (tmp_path / "run").mkdir()
    rc, err = run(capsys, tmp_path / "run", data[0])
    assert rc == 2 and "neither a checkpoint" in err and "Hugging Face model dir" in err


def test_missing_and_bad_data(capsys, tiny_model_dir, tmp_path, data):
    rc, err = run(capsys, tiny_model_dir, tmp_path / "none.jsonl")
    assert rc == 2 and "none.jsonl does not exist" in err
    rc, err = run(capsys, tiny_model_dir, data[1])
    assert rc == 2 and "bad.jsonl line 2: field 'reward_model.ground_truth' is missing" in err


def test_bad_override_names_the_key(capsys, tiny_model_dir, data):
    rc, err = run(capsys, tiny_model_dir, data[0], "eval.pas_k=4")
    assert rc == 2 and "eval.pas_k: unknown key" in err
    rc, err = run(capsys, tiny_model_dir, data[0], "eval.correct_component=nope")
    assert rc == 2 and "eval.correct_component='nope' is not a reward component" in err
