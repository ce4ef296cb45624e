"""Arithmetic rows: answers right, operand sizes as asked, DPO rejected answers wrong."""

import json
import re

import numpy as np
import pytest

from meshrl.inputs.data.arithmetic import arithmetic_rows, main, preference_pairs, wrong_answers
from meshrl.inputs.data.load import load_rows

QUESTION = re.compile(r"^What is (\d+)([+\-*])(\d+)\? Answer with a number\.$")


def parse(row):
    a, op, b = QUESTION.match(row["prompt"][0]["content"]).groups()
    return int(a), op, int(b)


def test_answers_are_correct_for_every_op():
    rows = arithmetic_rows(200, digits=2, ops="+-*", seed=5)
    python_ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}
    for row in rows:
        a, op, b = parse(row)
        assert 10 <= a <= 99 and 10 <= b <= 99
        assert row["reward_model"]["ground_truth"] == str(python_ops[op](a, b))
        assert row["extra_info"] | {"index": 0} == {"index": 0, "a": a, "b": b, "op": op}
    assert {parse(r)[1] for r in rows} == {"+", "-", "*"}
    assert min(int(r["reward_model"]["ground_truth"]) for r in rows if parse(r)[1] == "-") >= 0


def test_one_digit_sums_known_seed_and_range():
    rows = arithmetic_rows(50, seed=0)
    assert rows == arithmetic_rows(50, seed=0) and rows != arithmetic_rows(50, seed=1)
    assert all(0 <= parse(r)[0] <= 9 and 0 <= parse(r)[2] <= 9 for r in rows)
    assert rows[0]["data_source"] == "arithmetic" and rows[0]["reward_model"]["style"] == "rule"


def test_wrong_answers_differ_by_one_to_three_and_stay_non_negative():
    answers = np.array([0, 0, 1, 5, 18] * 40)
    wrong = wrong_answers(answers, np.random.default_rng(0))
    assert np.all(wrong >= 0)
    assert np.all((np.abs(wrong - answers) >= 1) & (np.abs(wrong - answers) <= 3))


def test_preference_pairs_chosen_right_rejected_wrong():
    for pair in preference_pairs(30, seed=4):
        a, _, b = parse(pair)
        assert pair["chosen"] == [{"role": "assistant", "content": str(a + b)}]
        assert pair["rejected"][0]["content"] != str(a + b)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="ops from"):
        arithmetic_rows(3, ops="/")


def test_cli_writes_jsonl(tmp_path, capsys):
    out = tmp_path / "sums.jsonl"
    main(["--out", str(out), "--n", "12", "--digits", "1", "--seed", "0"])
    assert "wrote 12 rows" in capsys.readouterr().out
    assert len(load_rows(out)) == 12
    assert json.loads(out.read_text().splitlines()[0]) == arithmetic_rows(12, seed=0)[0]
    main(["--out", str(tmp_path / "pairs.jsonl"), "--n", "3", "--dpo"])
    assert len(load_rows(tmp_path / "pairs.jsonl", kind="dpo")) == 3


def test_write_helpers_return_counts(tmp_path):
    from meshrl.inputs.data.arithmetic import write_pairs, write_problems

    assert write_problems(tmp_path / "a.parquet", n=4, digits=2, seed=1) == 4
    assert [r.ground_truth for r in load_rows(tmp_path / "a.parquet")] == [
        r["reward_model"]["ground_truth"] for r in arithmetic_rows(4, digits=2, seed=1)
    ]
    assert write_pairs(tmp_path / "p.jsonl", n=3) == 3


def test_tool_rows_can_start_with_worked_examples_of_a_call(tmp_path):
    from meshrl.inputs.data.arithmetic import TOOL_RULE, write_problems

    write_problems(tmp_path / "t.jsonl", n=3, digits=3, ops="*", seed=2, tool=True, tool_shots=1)
    row = json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])
    assert [m["role"] for m in row["prompt"]] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert row["prompt"][0]["content"] == TOOL_RULE and row["data_source"] == "tool_arith"
    call = row["prompt"][2]["content"]
    assert call == '<tool_call>{"name": "calculator", "arguments": {"expression": "123*45"}}</tool_call>'
    assert row["prompt"][3]["content"] == row["prompt"][4]["content"] == str(123 * 45)
    assert row["prompt"][5]["content"].startswith("What is ") and row["prompt"][5]["content"].endswith(
        "Answer with a number."
    )
    with pytest.raises(ValueError, match="tool_shots needs tool=True"):
        write_problems(tmp_path / "u.jsonl", n=1, tool_shots=1)
    with pytest.raises(ValueError, match=r"tool_shots=3: use 0..2"):
        write_problems(tmp_path / "u.jsonl", n=1, tool=True, tool_shots=3)
