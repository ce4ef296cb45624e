"""The learner leaves the run's config in a run dir no launcher wrote one into (compose,
Kubernetes), so `meshrl status` and the gateway know the steps asked for; a launcher's own
config.yaml is never overwritten.

    .venv/bin/python -m pytest -q tests/unit/services/learner/test_keep_config.py
"""

import yaml

from meshrl.config.load import load_config
from meshrl.run.summary import total_steps
from meshrl.run_layout import RunDir
from meshrl.services.learner.main import keep_config_with_the_run


def config(run_dir, steps: int):
    base = {"model": {"path": "/m"}, "data": {"train": "/d.jsonl"}, "run": {"dir": str(run_dir)}}
    return load_config(base={**base, "learner": {"steps": steps}})


def test_a_compose_run_dir_gets_the_config_and_its_total(tmp_path):
    run_dir = tmp_path / "runs" / "grpo"
    keep_config_with_the_run(config(run_dir, 7))
    assert yaml.safe_load(RunDir(run_dir).config.read_text())["learner"]["steps"] == 7
    assert total_steps(RunDir(run_dir)) == 7


def test_a_launchers_config_is_kept(tmp_path):
    RunDir(tmp_path).config.write_text("learner: {steps: 3}\n")
    keep_config_with_the_run(config(tmp_path, 9))
    assert RunDir(tmp_path).config.read_text() == "learner: {steps: 3}\n"
