"""PromptDataset: chat template applied, report numbers, over-limit policy, cursor resume.

The tiny char-level tokenizer makes lengths countable by hand: a one-message chat
"<|im_start|>user\\n{c}<|im_end|>\\n<|im_start|>assistant\\n" is 19 + len(c) tokens.
"""

import json

import pytest

from meshrl.inputs.data.prompts import PromptDataset
from meshrl.inputs.data.rows import DatasetError
from meshrl.inputs.models.tiny import build_tokenizer


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


def row(prompt, **extra):
    return {"prompt": prompt, "reward_model": {"ground_truth": "1"}, **extra}


@pytest.fixture
def known_file(tmp_path):
    rows = [
        row([{"role": "user", "content": "a"}], data_source="s"),  # 20 tokens
        row([{"role": "user", "content": "bb"}], data_source="s"),  # 21
        row([{"role": "user", "content": "cccc"}], extra_info={"k": 1}),  # 23
        row("ddddddddd"),
    ]  # 28 (plain str)
    f = tmp_path / "known.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def test_report_numbers_on_known_dataset(known_file, tok):
    ds = PromptDataset.from_file(known_file, tok, max_prompt_tokens=25, shuffle=False)
    rep = ds.report()
    # lengths 20, 21, 23, 28: mean 23; p95 = 23 + 0.85 * (28 - 23) = 27.25 (linear)
    assert rep.prompt_tokens == {"min": 20, "mean": 23.0, "p95": 27.25, "max": 28}
    assert (rep.rows, rep.kept, rep.over_limit, rep.invalid) == (4, 3, 1, 0)
    assert rep.over_limit_examples == [f"{known_file} line 4: 28 tokens"]
    assert rep.missing_optional == {"data_source": 2, "extra_info": 3}
    assert [len(item.prompt_ids) for item in ds] == [20, 21, 23]
    assert "4 rows, 3 kept" in str(rep)


def test_chat_template_applied_to_messages_and_plain_strings(known_file, tok):
    ds = PromptDataset.from_file(known_file, tok, max_prompt_tokens=100, shuffle=False)
    assert ds[0].text == "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\n"
    assert ds[3].text == "<|im_start|>user\nddddddddd<|im_end|>\n<|im_start|>assistant\n"
    assert ds[0].prompt_ids[0] == tok.convert_tokens_to_ids("<|im_start|>")
    assert tok.decode(ds[1].prompt_ids) == ds[1].text
    raw = PromptDataset.from_file(known_file, tok, apply_chat_template=False, shuffle=False)
    assert raw[0].text == "a" and raw[0].prompt_ids == [tok.convert_tokens_to_ids("a")]


def test_over_limit_error_names_the_line(known_file, tok):
    with pytest.raises(
        DatasetError,
        match=r"1 prompts exceed max_prompt_tokens=25 .*line 4: 28 "
        r"tokens.*raise data.max_prompt_tokens",
    ):
        PromptDataset.from_file(known_file, tok, max_prompt_tokens=25, over_limit="error")


def test_invalid_rows_dropped_and_counted(tmp_path, tok):
    f = tmp_path / "mixed.jsonl"
    lines = [row("ok"), {"prompt": "no answer"}, {"reward_model": {}}, row("fine")]
    f.write_text("".join(json.dumps(r) + "\n" for r in lines))
    ds = PromptDataset.from_file(f, tok, on_invalid="drop", shuffle=False)
    rep = ds.report()
    assert (rep.rows, rep.kept, rep.invalid) == (4, 2, 2)
    assert rep.invalid_fields == {"reward_model.ground_truth": 2, "prompt": 1}
    with pytest.raises(DatasetError, match="mixed.jsonl line 2: field 'reward_model.ground_truth'"):
        PromptDataset.from_file(f, tok)


def test_cursor_save_restore_yields_same_next_rows(tmp_path, tok):
    from meshrl.inputs.data.arithmetic import arithmetic_rows
    from meshrl.inputs.data.load import write_rows

    f = write_rows(tmp_path / "sums.jsonl", arithmetic_rows(7, seed=3))
    first = PromptDataset.from_file(f, tok, seed=11)
    first.next_batch(5)
    state = json.loads(json.dumps(first.state_dict()))  # survives a JSON checkpoint
    expected = [item.row.ref.index for item in first.next_batch(6)]  # crosses into epoch 1
    second = PromptDataset.from_file(f, tok, seed=0)
    second.load_state_dict(state)
    assert [item.row.ref.index for item in second.next_batch(6)] == expected
    assert second.state_dict() == {"n": 7, "seed": 11, "shuffle": True, "epoch": 1, "index": 4}


def test_from_config(known_file, tok):
    from meshrl.config.schema import DataConfig

    cfg = DataConfig(train=str(known_file), max_prompt_tokens=21, shuffle=False)
    ds = PromptDataset.from_config(cfg, tok)
    assert len(ds) == 2 and ds.report().max_prompt_tokens == 21
    with pytest.raises(DatasetError, match="data.eval is not set"):
        PromptDataset.from_config(cfg, tok, split="eval")
