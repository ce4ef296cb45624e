"""The reward contract: reward.proto stands alone and documents itself, and a dataset row's
fields reach an external service's ScoreItem intact (row → PromptTask → Group → ScoreItem)."""

import json
import re
from pathlib import Path

import pytest

from meshrl.api.common.v1 import common_pb2
from meshrl.api.reward.v1 import reward_pb2
from meshrl.inputs.data.rows import RowRef, validate_prompt_row
from meshrl.inputs.data.task_fields import task_fields
from meshrl.services.reward.external import to_score_item
from meshrl.services.reward.scorer import group_items
from meshrl.services.reward.servicer import BadItem, from_score_item

PROTO = Path(__file__).parents[4] / "protos/meshrl/reward/v1/reward.proto"
ROW = {
    "prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name two primes"}],
    "reward_model": {"ground_truth": ["2", "3"]},
    "data_source": "primes",
    "extra_info": {"difficulty": 2, "tags": ["ñ", "math"]},
}


def group_from_row(row: dict) -> common_pb2.Group:
    fields = task_fields(validate_prompt_row(row, RowRef("train.jsonl", 1)))
    task = common_pb2.PromptTask(group_id="g", prompt_text="<rendered>", **fields)
    sample = common_pb2.Sample(
        index=1, response_text="2 and 3", response_token_ids=b"\0" * 12, finish_reason=common_pb2.FINISH_REASON_LENGTH
    )
    return common_pb2.Group(group_id="g", task=task, samples=[sample])


def test_reward_proto_imports_nothing_and_names_language_packages():
    text = PROTO.read_text()
    assert not re.search(r"^import ", text, re.M)
    for option in ("go_package", "java_package", "java_multiple_files", "csharp_namespace"):
        assert f"option {option}" in text
    assert list(reward_pb2.DESCRIPTOR.dependencies) == []


def test_every_field_and_enum_value_has_a_doc_comment():
    lines = PROTO.read_text().splitlines()
    field = re.compile(r"^\s+(repeated |map<[^>]+> )?\w+ \w+ = \d+;")
    undocumented = [
        ln.strip() for i, ln in enumerate(lines) if field.match(ln) and not lines[i - 1].strip().startswith("//")
    ]
    assert undocumented == []


def test_row_fields_reach_the_score_item():
    item = to_score_item(group_items(group_from_row(ROW))[0])
    assert item.id == "g/1" and item.prompt == "<rendered>" and item.response == "2 and 3"
    assert json.loads(item.ground_truth_json) == ["2", "3"]  # JSON, not a Python repr
    assert json.loads(item.extra_json) == {"difficulty": 2, "tags": ["ñ", "math"]}
    assert [(m.role, m.content) for m in item.prompt_messages] == [("system", "Be brief."), ("user", "Name two primes")]
    assert item.data_source == "primes" and item.response_tokens == 3
    assert item.finish_reason == reward_pb2.FINISH_REASON_LENGTH and item.truncated


def test_plain_string_prompt_and_number_ground_truth():
    row = {"prompt": "3+4?", "reward_model": {"ground_truth": 7}}
    fields = task_fields(validate_prompt_row(row, RowRef("train.jsonl", 2)))
    assert fields["ground_truth"] == "7" and fields["ground_truth_json"] == "7"
    assert fields["extra_json"] == "{}" and fields["data_source"] == ""
    assert [(m.role, m.content) for m in fields["prompt_messages"]] == [("user", "3+4?")]


def test_meshrl_reward_service_reads_the_contract_back():
    item = from_score_item(to_score_item(group_items(group_from_row(ROW))[0]))
    assert item.ground_truth == '["2", "3"]' and item.num_tokens == 3 and item.truncated
    assert item.prompt_messages == (("system", "Be brief."), ("user", "Name two primes"))
    string_truth = from_score_item(reward_pb2.ScoreItem(id="a", ground_truth_json='"7"'))
    assert string_truth.ground_truth == "7"


def test_ground_truth_that_is_not_json_is_refused_naming_the_item():
    with pytest.raises(BadItem, match="item 'x': ground_truth_json is not JSON"):
        from_score_item(reward_pb2.ScoreItem(id="x", ground_truth_json="7 apples"))
