"""A textarena game trained through the whole mesh: `meshrl train` on the tiny model with
`environment.textarena` launches the environment service whose library worker child plays
GuessTheNumber-v0 in the textarena venv; every task is a game (Reset: the game's prompt, each
model turn a guess, the game's reward when it ends or params.truncated when max_turns cuts it),
and the step trains with every group trained once or dropped with a reason.

Not in CI (it costs minutes of the CI's 45, and the textarena adapter is the environment
service's like the others, whose mesh runs CI keeps: OpenEnv, verifiers; the game itself is
played over env.proto by test_textarena_service.py in CI). Run it by hand:

    MESHRL_EXTRA_E2E=1 timeout 1200 .venv/bin/python -m pytest -q -s -m slow tests/services/environment/adapters/test_textarena_mesh.py
"""

import os

import pytest

from meshrl.inputs.data.arithmetic import arithmetic_rows
from meshrl.inputs.data.load import write_rows
from tests.e2e.conftest import mesh_run
from tests.e2e.test_mesh_scale import rows
from tests.fixtures.adapters import adapter_python


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("MESHRL_EXTRA_E2E") != "1", reason="set MESHRL_EXTRA_E2E=1 (not in CI: see the docstring)"
)
def test_a_textarena_game_trains_through_the_mesh(tiny_long_model_dir, tmp_path):
    data = {
        "train": str(write_rows(tmp_path / "train.jsonl", arithmetic_rows(32, seed=0))),
        "eval": str(write_rows(tmp_path / "eval.jsonl", arithmetic_rows(8, seed=1))),
    }
    run_dir = tmp_path / "run"
    block = f"{{game: GuessTheNumber-v0, python: '{adapter_python('textarena')}'}}"
    _, metrics, ledger = mesh_run(
        tiny_long_model_dir,
        data,
        run_dir,
        "learner.steps=1",
        "learner.prompts_per_step=2",
        "rollout.sampling.group_size=4",
        "environment.name=guess",
        f"environment.textarena={block}",
        "reward.components=[{name: env, kind: environment, weight: 1.0}]",
        "rollout.agent.max_turns=2",
        "rollout.max_model_len=1024",
        "data.max_prompt_tokens=512",
    )
    assert [m["step"] for m in metrics] == [0]
    samples = rows(run_dir / "samples.jsonl")
    assert samples and all(s["environment"] == "guess" and 1 <= len(s["turns"]) <= 2 for s in samples)
    # the game's reward (a win 1.0; the second invalid move or the turn limit its own) or, cut
    # at max_turns before the game ended, params.truncated's 0.0
    assert all(0.0 <= s["env_reward"] <= 1.0 and s["reward"] == s["env_reward"] for s in samples)
    trained = [e["group_id"] for e in ledger if e["event"] == "trained"]
    published = {e["group_id"] for e in ledger if e["event"] == "published"}
    dropped = {e["group_id"]: e["reason"] for e in ledger if e["event"] == "dropped"}
    assert trained and len(trained) == len(set(trained)) and published == set(trained) | set(dropped)
    assert all(dropped.values())  # a group dropped says why
