"""What the dashboard shows of an observation: the messages the environment sent, without the
chat template's markup the model read around them (gateway/runs/samples.py)."""

from meshrl.gateway.runs.samples import observation_messages, view_row

CHATML_TOOL = "<|im_end|>\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n"
CHATML_HERMES = "\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
LLAMA3 = "<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"


def test_chatml_and_llama3_observations_are_their_messages_without_the_next_assistant_header():
    assert observation_messages(CHATML_TOOL) == [{"role": "tool", "content": "42"}]
    assert observation_messages(LLAMA3) == [{"role": "ipython", "content": "42"}]


def test_a_hermes_tool_response_in_a_user_message_is_the_tools():
    assert observation_messages(CHATML_HERMES) == [{"role": "tool", "content": "42"}]


def test_several_messages_keep_their_roles_and_lines():
    text = "<|im_end|>\n<|im_start|>tool\nerror: bad JSON<|im_end|>\n<|im_start|>user\nTry again.\nNow.<|im_end|>\n<|im_start|>assistant\n"
    assert observation_messages(text) == [
        {"role": "tool", "content": "error: bad JSON"},
        {"role": "user", "content": "Try again.\nNow."},
    ]


def test_text_in_no_known_markup_loses_only_its_special_tokens():
    assert observation_messages("42") == [{"role": "tool", "content": "42"}]
    assert observation_messages("<|eom|>42<|next|>") == [{"role": "tool", "content": "42"}]
    assert observation_messages("<|im_end|>\n") == []


def test_view_row_adds_messages_beside_the_rendered_observation():
    row = {"turns": [{"observation": CHATML_TOOL}, {"observation": ""}], "prompt": "p"}
    assert view_row(row)["turns"] == [
        {"observation": CHATML_TOOL, "observation_messages": [{"role": "tool", "content": "42"}]},
        {"observation": ""},
    ]
    assert view_row({"prompt": "p"}) == {"prompt": "p"}  # a single-turn row as it is
