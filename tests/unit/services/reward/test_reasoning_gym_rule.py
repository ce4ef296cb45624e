"""The reward rule `reasoning_gym` through its real scorer child (reasoning-gym's own
score_answer, in the venv tests/fixtures/adapters.py builds once), and its bad inputs: a row
without the task, a scorer answering NaN or no number (FakeScorer, a stand-in child named as
such), a scorer that dies, a missing venv."""

import asyncio
import json
import math
import sys

import pytest

from meshrl.config import ConfigError
from meshrl.config.reward_rules import ReasoningGymParams
from meshrl.inputs.data.reasoning_gym import worker
from meshrl.inputs.data.reasoning_gym.rows import reasoning_gym_rows, task_specs
from meshrl.services.reward.components import RuleComponent
from meshrl.services.reward.registry import get_rule
from meshrl.services.reward.rules.reasoning_gym import reasoning_gym, shutdown_scorers, warm_scorer
from meshrl.services.reward.types import RewardItem, Status
from tests.fixtures.adapters import adapter_python


@pytest.fixture(scope="module")
def rg_python():
    yield adapter_python("reasoning_gym")
    shutdown_scorers()


@pytest.fixture(scope="module")
def rows(rg_python):
    """Two real rows each of leg_counting (one animal) and chain_sum (two terms)."""
    settings = ["leg_counting.min_animals=1", "leg_counting.max_animals=1", "chain_sum.max_terms=2"]
    got = reasoning_gym_rows(rg_python, task_specs("leg_counting,chain_sum", None, settings), n=12, seed=0)
    by_task = {}
    for row in got:
        by_task.setdefault(row["extra_info"]["reasoning_gym"]["task"], []).append(row)
    return by_task


def item(row: dict | None, response: str) -> RewardItem:
    return RewardItem(id="g/0", response=response, extra_json=json.dumps(row["extra_info"]) if row else "{}")


def answer_of(row: dict) -> str:
    return row["reward_model"]["ground_truth"]


def test_the_tasks_own_scores_partial_credit_as_given(rg_python, rows):
    legs, chain = rows["leg_counting"][0], rows["chain_sum"][0]
    a, c = answer_of(legs), answer_of(chain)
    responses = [
        (legs, f"<answer>{a}</answer>"),  # exact: 1.0
        (legs, f"So... <answer> {a} legs </answer>"),  # the answer inside a longer one: len(a)/len(a + " legs")
        (legs, f"<answer>{int(a) + 1}</answer>"),  # wrong: 0.0
        (legs, a),  # no tag: no answer, 0.0
        (chain, f"<answer>{c}</answer>"),  # another task in the same batch: its own scorer
        (chain, f"<answer>{c}</answer><answer>0</answer>"),  # the last tag counts
    ]
    scores = reasoning_gym([item(r, text) for r, text in responses], ReasoningGymParams(python=rg_python))
    assert all(s.ok for s in scores)
    expected = [1.0, len(a) / (len(a) + len(" legs")), 0.0, 0.0, 1.0, 1.0 if c == "0" else 0.0]
    assert [s.value for s in scores] == pytest.approx(expected)
    assert [s.details["answered"] for s in scores] == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]


def test_a_row_without_the_task_is_that_items_error(rg_python, rows):
    legs = rows["leg_counting"][0]
    items = [item(None, "<answer>4</answer>"), item(legs, f"<answer>{answer_of(legs)}</answer>")]
    missing, scored = reasoning_gym(items, ReasoningGymParams(python=rg_python))
    assert missing.status == Status.ERROR and "make the rows with `meshrl data reasoning-gym`" in missing.error
    assert scored.ok and scored.value == 1.0


FAKE_HANDLERS = """
import os, sys
REPLIES = {replies!r}
def score(items):
    if not items:
        return []  # the start-up check
    if REPLIES == "die":
        sys.stderr.write("fake scorer: dying on purpose\\n")
        sys.stderr.flush()
        os._exit(3)
    return eval(REPLIES)
"""


@pytest.fixture
def fake_scorer(tmp_path, monkeypatch):
    """FakeScorer: a stand-in handlers script (not reasoning-gym) served by the real library worker
    under meshrl's own python, answering `replies` (a Python expression, or "die") to every batch."""

    def make(replies: str) -> ReasoningGymParams:
        script = tmp_path / f"fake_handlers_{abs(hash(replies))}.py"
        script.write_text(FAKE_HANDLERS.format(replies=replies))
        monkeypatch.setattr(worker, "HANDLERS", str(script))
        return ReasoningGymParams(python=sys.executable)

    yield make
    shutdown_scorers()


def test_no_number_from_the_scorer_is_that_items_error_with_its_reason(fake_scorer, rows):
    params = fake_scorer('["abc", {"error": "score_answer raised KeyError"}, None, 0.5]')
    component = RuleComponent("correct", 1.0, get_rule("reasoning_gym"), params)
    scores = asyncio.run(component.score([item(rows["leg_counting"][0], "<answer>1</answer>")] * 4))
    assert [s.status for s in scores] == [Status.ERROR, Status.ERROR, Status.ERROR, Status.OK]
    assert scores[0].error == "reasoning-gym task leg_counting: score_answer gave 'abc', not a finite number"
    assert scores[1].error == "reasoning-gym task leg_counting: score_answer raised KeyError"
    assert scores[2].error == "reasoning-gym task leg_counting: score_answer gave None, not a finite number"
    assert scores[3].value == 0.5 and math.isnan(scores[0].value)


def test_nan_from_the_scorer_fails_its_batch_with_the_reason(fake_scorer, rows):
    params = fake_scorer('[0.5, float("nan")]')
    scores = reasoning_gym([item(rows["leg_counting"][0], "<answer>1</answer>")] * 2, params)
    assert all(s.status == Status.ERROR for s in scores)  # NaN is no JSON: the whole answer is refused
    assert "Out of range float values are not JSON compliant" in scores[0].error


def test_a_scorer_that_dies_fails_its_batch_with_its_last_words(fake_scorer, rows):
    params = fake_scorer("die")
    scores = reasoning_gym([item(rows["leg_counting"][0], "<answer>1</answer>")] * 2, params)
    assert all(s.status == Status.ERROR for s in scores)
    assert "fake scorer: dying on purpose" in scores[0].error


def test_a_missing_venv_is_a_config_error_at_start_naming_the_build_command(tmp_path):
    with pytest.raises(ConfigError, match="is missing; build it with: bash scripts/adapter_venv.sh reasoning_gym"):
        warm_scorer(ReasoningGymParams(python=str(tmp_path / "nope" / "python")))
