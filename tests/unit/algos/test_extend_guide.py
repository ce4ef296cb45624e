"""docs/guide/extend.md's "A new advantage estimator or policy loss", followed word for word: its Python
blocks written to the files their first line names, its shell block run as it stands in a
scratch folder (with the example config it names), then the learner's own training step on a
tiny model with the two parts the config names.

    .venv/bin/python -m pytest -q tests/unit/algos/test_extend_guide.py
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from meshrl.config import load_config

REPO = Path(__file__).resolve().parents[3]
GUIDE = REPO / "docs" / "guide" / "extend.md"
SECTION = "## A new advantage estimator or policy loss"


def section_blocks() -> list[tuple[str, str]]:
    text = GUIDE.read_text()
    body = text[text.index(SECTION) :]
    body = re.split(r"\n## ", body[len(SECTION) :])[0]  # up to the next heading
    return re.findall(r"```(\w+)\n(.*?)```", body, flags=re.S)


def follow(workdir: Path) -> subprocess.CompletedProcess:
    """Write every Python block to its file and run the shell block in `workdir`."""
    shutil.copytree(REPO / "examples", workdir / "examples")
    shells = []
    for language, code in section_blocks():
        if language == "python":
            target = re.match(r"# (\S+)", code).group(1)
            (workdir / target).parent.mkdir(parents=True, exist_ok=True)
            (workdir / target).write_text(code)
            (workdir / target).with_name("__init__.py").touch()  # "next to an empty __init__.py"
        elif language == "bash":
            shells.append(code)
    assert len(shells) == 1, shells
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["bash", "-ec", shells[0]], cwd=workdir, env=env, capture_output=True, text=True)


def test_the_extend_section_works_as_written(tmp_path, monkeypatch):
    result = follow(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "advantage_estimator: my_algo.parts:my_baseline" in result.stdout
    assert "policy_loss: my_algo.parts:my_loss" in result.stdout

    # the learner's side: the same names through the registry, in a real training step
    from meshrl.services.learner.train.policy import build_policy
    from meshrl.services.learner.train.step import TrainStep
    from tests.unit.services.learner.train.helpers import build_tiny_llama, random_batch, weights_of

    monkeypatch.syspath_prepend(str(tmp_path))
    cfg = load_config(
        tmp_path / "examples" / "grpo_smollm2.yaml",
        overrides=[
            "algorithm.advantage_estimator=my_algo.parts:my_baseline",
            "algorithm.policy_loss=my_algo.parts:my_loss",
        ],
    )
    step = TrainStep(build_policy(build_tiny_llama(), cfg.trainer, total_steps=2), cfg.algorithm, cfg.trainer)
    assert (step.estimator.registered_name, step.policy_loss.registered_name) == ("my_baseline", "my_loss")
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0])
    advantages = step.estimator(
        rewards=rewards, response_mask=torch.ones(4, 2), group_ids=torch.zeros(4, dtype=torch.int64)
    ).advantages
    assert torch.equal(advantages, torch.tensor([[0.5] * 2, [-0.5] * 2, [-0.5] * 2, [0.5] * 2]))
    before = weights_of(step.policy.model)
    metrics = step(random_batch(), 0)
    assert torch.isfinite(torch.tensor(metrics["loss"]))
    assert any(not torch.equal(before[k], v) for k, v in weights_of(step.policy.model).items())
    for module in [m for m in sys.modules if m.startswith("my_algo")]:
        del sys.modules[module]
    from meshrl.algos.registry import ADVANTAGE_ESTIMATORS, POLICY_LOSSES

    for name in ("my_baseline", "my_algo.parts:my_baseline"):
        ADVANTAGE_ESTIMATORS.remove(name)
    for name in ("my_loss", "my_algo.parts:my_loss"):
        POLICY_LOSSES.remove(name)
