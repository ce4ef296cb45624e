"""reasoning-gym rows without the library: the answer a completion carries (answer.py) and the
`meshrl data reasoning-gym` options as the handler's task list (rows.task_specs)."""

import pytest

from meshrl.inputs.data.reasoning_gym.answer import extract_answer
from meshrl.inputs.data.reasoning_gym.rows import shot_turns, task_specs, to_row


@pytest.mark.parametrize(
    ("completion", "answer"),
    [
        ("<answer>7</answer>", "7"),
        ("I count 3 legs... <answer> 12 </answer>", "12"),  # one space each side trimmed, then stripped
        ("<answer>1</answer> no wait <answer>2</answer>", "2"),  # the last pair, as reasoning-gym's extract_answer
        ("<answer>\n['a', 'b']\n</answer>", "['a', 'b']"),  # spans lines
        ("<answer></answer>", ""),  # an empty answer is an answer (every task scores it 0.0)
        ("7", None),  # no tag: no answer
        ("<answer>7", None),  # unclosed
        ("<ANSWER>7</ANSWER>", None),  # the tag is lower case, as the prompts write it
    ],
)
def test_extract_answer_reads_the_last_answer_tag(completion, answer):
    assert extract_answer(completion) == answer


def test_one_task_takes_plain_keys_with_values_read_as_yaml():
    specs = task_specs("leg_counting", None, ["min_animals=1", "max_animals=2", "flag=true", "ratio=0.5", "ops=[+, -]"])
    config = {"min_animals": 1, "max_animals": 2, "flag": True, "ratio": 0.5, "ops": ["+", "-"]}
    assert specs == [{"name": "leg_counting", "weight": 1.0, "config": config}]


def test_several_tasks_take_weights_and_per_task_keys():
    specs = task_specs(" chain_sum , leg_counting", "3,1", ["chain_sum.max_terms=2", "leg_counting.max_animals=4"])
    assert specs == [
        {"name": "chain_sum", "weight": 3.0, "config": {"max_terms": 2}},
        {"name": "leg_counting", "weight": 1.0, "config": {"max_animals": 4}},
    ]


@pytest.mark.parametrize(
    ("tasks", "weights", "settings", "message"),
    [
        (",", None, [], "--task names no task"),
        ("a,b,a", None, [], "--task names a twice"),
        ("a,b", "1", [], "give 2 positive numbers, one per --task name"),
        ("a,b", "1,0", [], "give 2 positive numbers"),
        ("a,b", "1,nan", [], "give 2 positive numbers"),
        ("a,b", "1,x", [], "give numbers separated by commas"),
        ("a,b", None, ["k=1"], "with several tasks name the task, e.g. a.k=1"),
        ("a,b", None, ["c.k=1"], "'c' is not one of the --task names (a, b)"),
        ("a", None, ["k"], "write KEY=VALUE"),
        ("a", None, ["=1"], "write KEY=VALUE"),
    ],
)
def test_bad_options_say_what_to_write(tasks, weights, settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        task_specs(tasks, weights, settings)


def test_a_row_carries_what_the_scorer_needs():
    item = {"task": "t", "config": {"k": 1}, "entry": {"question": "Q?", "answer": "42", "metadata": {"x": 1}}}
    head = [{"role": "system", "content": "SYSTEM"}]
    row = to_row(3, item, head)
    assert row == {
        "prompt": [{"role": "system", "content": "SYSTEM"}, {"role": "user", "content": "Q?"}],
        "reward_model": {"style": "rule", "ground_truth": "42"},
        "data_source": "reasoning_gym/t",
        "extra_info": {"index": 3, "reasoning_gym": item},
    }


def test_worked_examples_are_turns_answering_in_the_tag():
    items = [{"task": "t", "config": {}, "entry": {"question": f"Q{i}?", "answer": str(i)}} for i in (1, 2)]
    assert shot_turns(items) == [
        {"role": "user", "content": "Q1?"},
        {"role": "assistant", "content": "<answer>1</answer>"},
        {"role": "user", "content": "Q2?"},
        {"role": "assistant", "content": "<answer>2</answer>"},
    ]
