"""Malformed rows are reported with file, line (or parquet row), field and a fix."""

import json

import pytest

from meshrl.inputs.data.load import load_rows, write_rows
from meshrl.inputs.data.rows import DatasetError, RowRef, validate_dpo_row, validate_prompt_row

GOOD = {
    "prompt": [{"role": "user", "content": "What is 1+1?"}],
    "reward_model": {"ground_truth": "2"},
    "data_source": "arithmetic",
}


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_missing_ground_truth_on_line_3_is_reported_as_line_3(tmp_path):
    bad = {"prompt": "What is 2+2?", "reward_model": {}}
    f = write_lines(tmp_path / "train.jsonl", [json.dumps(GOOD), json.dumps(GOOD), json.dumps(bad)])
    with pytest.raises(DatasetError) as err:
        load_rows(f)
    msg = str(err.value)
    assert msg.startswith(f"{f} line 3: field 'reward_model.ground_truth' is missing")
    assert '"reward_model": {"ground_truth": "<answer>"}' in msg


def test_invalid_json_line_number_counts_blank_lines(tmp_path):
    f = write_lines(tmp_path / "train.jsonl", [json.dumps(GOOD), "", '{"prompt": '])
    with pytest.raises(DatasetError, match=r"train.jsonl line 3: not valid JSON"):
        load_rows(f)


def test_bad_message_role_names_the_message():
    row = {**GOOD, "prompt": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "x"}]}
    with pytest.raises(
        DatasetError,
        match=r"f.jsonl line 7: field 'prompt\[1\].role' is 'bot'; "
        r"use one of \['system', 'user', 'assistant', 'tool'\]",
    ):
        validate_prompt_row(row, RowRef("f.jsonl", 7))


def test_counts_further_problems_in_the_row():
    with pytest.raises(DatasetError, match=r"'prompt' is missing.*\(and 1 more problems"):
        validate_prompt_row({"reward_model": {}}, RowRef("f.jsonl", 1))


def test_valid_row_keeps_fields_and_plain_string_prompt():
    row = validate_prompt_row({"prompt": "Hi", "reward_model": {"ground_truth": 3}}, RowRef("f.jsonl", 1))
    assert (row.prompt, row.ground_truth, row.data_source, row.extra_info) == ("Hi", 3, None, {})


def test_dpo_row_missing_rejected_and_empty_chosen():
    with pytest.raises(DatasetError, match="field 'rejected' is missing; DPO rows need prompt"):
        validate_dpo_row({"prompt": "q", "chosen": "a"}, RowRef("p.jsonl", 2))
    with pytest.raises(DatasetError, match="p.jsonl line 2: field 'chosen' is an empty string"):
        validate_dpo_row({"prompt": "q", "chosen": "", "rejected": "b"}, RowRef("p.jsonl", 2))
    ok = validate_dpo_row({"prompt": "q", "chosen": "a", "rejected": "b"}, RowRef("p.jsonl", 2))
    assert (ok.prompt, ok.chosen, ok.rejected) == ("q", "a", "b")


def test_parquet_rows_are_reported_by_row_index(tmp_path):
    bad = {**GOOD, "reward_model": {"ground_truth": None}}
    f = write_rows(tmp_path / "train.parquet", [GOOD, GOOD, bad])
    with pytest.raises(DatasetError, match=r"train.parquet row 2: field 'reward_model.ground_truth'"):
        load_rows(f)
