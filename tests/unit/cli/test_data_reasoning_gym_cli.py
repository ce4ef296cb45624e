"""`meshrl data reasoning-gym`: rows drawn by the real reasoning-gym library in its own venv
(built once by tests/fixtures/adapters.py), options passed through, bad input refused in one line."""

import json

import pytest

from meshrl.cli.main import main
from tests.fixtures.adapters import adapter_python


@pytest.fixture(scope="session")
def rg_python() -> str:
    return adapter_python("reasoning_gym")


def make(rg_python, out, *args: str) -> int:
    return main(["data", "reasoning-gym", "--python", rg_python, "--out", str(out), *args])


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rows_carry_the_question_the_answer_and_the_entry(rg_python, tmp_path, capsys):
    out = tmp_path / "sub" / "legs.jsonl"
    settings = ["--config", "min_animals=1", "--config", "max_animals=1"]
    assert make(rg_python, out, "--task", "leg_counting", *settings, "--n", "5", "--seed", "3") == 0
    assert f"wrote 5 rows to {out}" in capsys.readouterr().out
    for i, row in enumerate(rows(out)):
        block = row["extra_info"]["reasoning_gym"]
        assert block["task"] == "leg_counting" and block["config"] == {"min_animals": 1, "max_animals": 1}
        assert row["extra_info"]["index"] == i and row["data_source"] == "reasoning_gym/leg_counting"
        assert row["reward_model"]["ground_truth"] == block["entry"]["answer"]
        assert row["prompt"][1]["content"] == block["entry"]["question"]
        assert "<answer>" in row["prompt"][0]["content"]  # reasoning-gym's direct prompt asks for the tag
        assert block["entry"]["metadata"]["num_animals"] == 1  # the setting reached the task


def test_composite_weights_and_per_task_settings(rg_python, tmp_path):
    out = tmp_path / "mix.jsonl"
    args = ["--task", "chain_sum,leg_counting", "--weights", "3,1", "--config", "chain_sum.max_terms=2"]
    assert make(rg_python, out, *args, "--n", "400", "--seed", "0") == 0
    got = rows(out)
    tasks = [r["extra_info"]["reasoning_gym"]["task"] for r in got]
    share = tasks.count("chain_sum") / len(tasks)
    assert len(got) == 400 and set(tasks) == {"chain_sum", "leg_counting"}
    assert 0.68 <= share <= 0.82  # 3:1 is 0.75; a binomial's 3 sd over 400 rows is 0.065
    terms = [
        r["extra_info"]["reasoning_gym"]["entry"]["metadata"]["num_terms"] for r in got if "chain" in r["data_source"]
    ]
    assert set(terms) <= {2}  # chain_sum.max_terms=2 (min_terms is 2 by default)


def test_same_seed_same_rows_other_seed_other_rows(rg_python, tmp_path):
    a, b, c = (tmp_path / f"{name}.jsonl" for name in "abc")
    for path, seed in ((a, "1"), (b, "1"), (c, "2")):
        assert make(rg_python, path, "--task", "chain_sum,leg_counting", "--n", "20", "--seed", seed) == 0
    assert a.read_text() == b.read_text() != c.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "leg_countin"], "unknown reasoning-gym task 'leg_countin'; closest: leg_counting, "),
        (
            ["--task", "leg_counting", "--config", "legs=3"],
            "task leg_counting has no config key 'legs'; its keys: min_animals",
        ),
        (["--task", "leg_counting", "--config", "seed=3"], "task leg_counting: seed is set by --seed"),
        (["--task", "leg_counting", "--config", "max_animals=0"], "refused by reasoning-gym"),
        (["--task", "chain_sum,leg_counting", "--config", "max_terms=2"], "name the task, e.g. chain_sum.max_terms=2"),
    ],
)
def test_bad_tasks_and_settings_are_one_line_exit_2(rg_python, tmp_path, capsys, args, message):
    out = tmp_path / "x.jsonl"
    assert make(rg_python, out, *args, "--n", "3") == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_a_missing_venv_names_the_command_that_builds_it(tmp_path, capsys):
    out = tmp_path / "x.jsonl"
    assert make(str(tmp_path / "nope" / "python"), out, "--task", "leg_counting", "--n", "3") == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("is missing; build it with: bash scripts/adapter_venv.sh reasoning_gym")
    assert len(err.splitlines()) == 1 and not out.exists()


def test_shots_are_the_same_worked_examples_before_every_question(rg_python, tmp_path):
    plain, shots = tmp_path / "plain.jsonl", tmp_path / "shots.jsonl"
    assert make(rg_python, plain, "--task", "chain_sum", "--n", "6", "--seed", "4") == 0
    assert make(rg_python, shots, "--task", "chain_sum", "--n", "6", "--seed", "4", "--shots", "2") == 0
    without, with_shots = rows(plain), rows(shots)
    heads = {json.dumps(r["prompt"][:5]) for r in with_shots}
    roles = [m["role"] for m in with_shots[0]["prompt"]]
    assert len(heads) == 1 and roles == ["system", "user", "assistant", "user", "assistant", "user"]
    shot_answers = [m["content"] for m in with_shots[0]["prompt"][2:5:2]]
    assert all(a.startswith("<answer>") and a.endswith("</answer>") for a in shot_answers)
    # the rows themselves are the same draws as without shots (the examples come after them)
    assert [r["prompt"][-1] for r in with_shots] == [r["prompt"][-1] for r in without]
    assert [r["extra_info"] for r in with_shots] == [r["extra_info"] for r in without]
