"""Held-out scoring sends the row's extra_info to the reward service, as training does: rules
that read it (reasoning_gym rebuilds the task's scorer from it) score held-out samples too."""

from meshrl.api.common.v1 import common_pb2
from meshrl.eval.records import from_group
from meshrl.eval.reward_client import score_item

EXTRA = '{"reasoning_gym": {"task": "leg_counting", "config": {}, "entry": {"answer": "4"}}}'


def test_score_items_carry_the_rows_extra_info_and_records_leave_it_out():
    task = common_pb2.PromptTask(group_id="g", prompt_text="p", ground_truth="4", extra_json=EXTRA)
    group = common_pb2.Group(group_id="g", task=task, samples=[common_pb2.Sample(index=0, response_text="r")])
    (sample,) = from_group(group, prompt_index=0, mode="greedy")
    assert score_item(sample).extra_json == EXTRA
    assert "extra_json" not in sample.as_json()  # the records keep what the evaluation found
