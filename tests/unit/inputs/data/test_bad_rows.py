"""A corpus of bad dataset lines: each error names the file, the line and what to do."""

import json

import pytest

from meshrl.inputs.data.load import load_rows
from meshrl.inputs.data.rows import DatasetError

GOOD = {"prompt": [{"role": "user", "content": "1+1?"}], "reward_model": {"ground_truth": "2"}}
GOOD_PAIR = {"prompt": "1+1?", "chosen": "2", "rejected": "3"}


def line(row) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode("utf-8") + b"\n"


# (id, kind, bytes of line 2 (line 1 is a good row), substrings the message must hold)
CASES = [
    (
        "latin1-byte",
        "prompt",
        b'{"prompt": "caf\xe9", "reward_model": {"ground_truth": "1"}}\n',
        ["line 2", "byte 0xe9 at column 16 is not UTF-8", "save the file as UTF-8"],
    ),
    ("cp1252-quote", "prompt", b'{"prompt": "\x93hi\x94"}\n', ["line 2", "byte 0x93", "UTF-8"]),
    ("not-json", "prompt", b"{prompt: 1}\n", ["line 2", "not valid JSON", "one JSON object"]),
    ("truncated-json", "prompt", b'{"prompt": "x", \n', ["line 2", "not valid JSON"]),
    ("array-row", "prompt", line([1, 2]), ["line 2", "must be a JSON object, got list"]),
    (
        "no-prompt",
        "prompt",
        line({"reward_model": {"ground_truth": "1"}}),
        ["line 2", "field 'prompt' is missing", "add the chat messages"],
    ),
    (
        "empty-prompt",
        "prompt",
        line({**GOOD, "prompt": ""}),
        ["line 2", "field 'prompt' is an empty string; give the text"],
    ),
    (
        "bad-role",
        "prompt",
        line({**GOOD, "prompt": [{"role": "bot", "content": "x"}]}),
        ["line 2", "prompt[0].role", "'bot'", "use one of"],
    ),
    (
        "no-content",
        "prompt",
        line({**GOOD, "prompt": [{"role": "user"}]}),
        ["line 2", "prompt[0].content", "must be a string"],
    ),
    (
        "no-ground-truth",
        "prompt",
        line({"prompt": "x"}),
        ["line 2", "reward_model.ground_truth", '"reward_model": {"ground_truth": "<answer>"}'],
    ),
    (
        "dict-ground-truth",
        "prompt",
        line({**GOOD, "reward_model": {"ground_truth": {"a": 1}}}),
        ["line 2", "reward_model.ground_truth", "must be a string, number or list"],
    ),
    ("numeric-source", "prompt", line({**GOOD, "data_source": 3}), ["line 2", "data_source", "must be a string"]),
    (
        "dpo-no-rejected",
        "dpo",
        line({"prompt": "x", "chosen": "y"}),
        ["line 2", "field 'rejected' is missing", "prompt, chosen and rejected"],
    ),
    (
        "dpo-non-utf8",
        "dpo",
        b'{"prompt": "x", "chosen": "\xff", "rejected": "z"}\n',
        ["line 2", "byte 0xff", "not UTF-8"],
    ),
]


@pytest.mark.parametrize("kind, bad, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_line_is_named_with_its_fix(tmp_path, kind, bad, expected):
    path = tmp_path / "train.jsonl"
    path.write_bytes(line(GOOD if kind == "prompt" else GOOD_PAIR) + bad)
    with pytest.raises(DatasetError) as err:
        load_rows(path, kind=kind)
    message = str(err.value)
    assert message.startswith(f"{path} line 2")
    for part in expected:
        assert part in message, f"{part!r} not in {message!r}"


def test_utf8_text_beyond_ascii_is_read_unchanged(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_bytes(line({**GOOD, "prompt": "café ∑"}) + b"\n" + line(GOOD))  # blank line 2
    rows = load_rows(path)
    assert rows[0].prompt == "café ∑" and [r.ref.index for r in rows] == [1, 3]
