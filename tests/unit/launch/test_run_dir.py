"""Which run dirs a fresh run and a resume accept: a partial checkpoint blocks neither."""

import pytest

from meshrl.config.load import load_config
from meshrl.errors import LaunchError
from meshrl.launch.run_dir import prepare_run_dir

CFG = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "algorithm": {"preset": "grpo"}}


def run_dir_with(tmp_path, *folders: str, config: bool = False):
    run = tmp_path / "run"
    for name in folders:
        (run / "checkpoints" / name).mkdir(parents=True)
    if config:
        run.mkdir(exist_ok=True)
        (run / "config.yaml").write_text("{}")
    return run


def test_a_fresh_run_may_use_a_dir_holding_only_a_partial_save(tmp_path):
    run = run_dir_with(tmp_path, "step_1.tmp-4242")
    _, path = prepare_run_dir(load_config(base=CFG), run)
    assert path.is_file()


def test_a_fresh_run_refuses_a_dir_with_a_finished_checkpoint(tmp_path):
    run = run_dir_with(tmp_path, "step_2", "step_3.tmp-1")
    with pytest.raises(LaunchError, match=r"already holds a run \(checkpoints\).*--resume"):
        prepare_run_dir(load_config(base=CFG), run)


def test_a_resume_with_only_a_partial_save_is_accepted(tmp_path):
    run = run_dir_with(tmp_path, "step_1.tmp-4242", config=True)
    _, path = prepare_run_dir(load_config(base=CFG), run, resume=True)
    assert path.is_file()


def test_a_resume_of_a_dir_that_is_no_run_names_what_is_missing(tmp_path):
    with pytest.raises(LaunchError, match=r"no config.yaml there"):
        prepare_run_dir(load_config(base=CFG), tmp_path / "elsewhere", resume=True)
